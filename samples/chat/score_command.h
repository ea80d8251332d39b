// /score and /score-next: how likely the model finds each of several replies to a message, or
// each of several ways for the last reply to go on, best first, with nothing added to the
// conversation.
#pragma once

#include <string_view>

#include "sessions.h"

namespace chat {

// `arg` is "MESSAGE | REPLY | REPLY ...": at least one reply; blanks around each part are
// dropped. Prints a usage line when it is not.
void score_replies(Sessions::Open& open, std::string_view arg);

// `arg` is "TEXT | TEXT ...": the last reply's possible next words (as /continue TEXT takes
// them), or the reply to the last message when it has none. Prints a usage line when empty.
void score_next(Sessions::Open& open, std::string_view arg);

}  // namespace chat
