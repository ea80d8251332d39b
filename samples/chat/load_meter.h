// The model's loading shown on a terminal, one line redrawn in place.
#pragma once

namespace chat {

// A parley_progress_fn: "loading the model: N %" on stderr while that is a terminal (nothing
// otherwise, so that logs and pipes get no carriage returns); the line is cleared at 1.
// Always goes on (returns 0). While the line shows, the library's log lines clear it first,
// and it is drawn again after them.
int show_load_progress(float fraction, void* user);

// Clears the line, if it shows (an open that failed), and gives the log back to the library's
// own stderr lines.
void end_load_meter();

}  // namespace chat
