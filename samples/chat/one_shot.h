// parley-chat -p: send one message, print the reply, exit.
#pragma once

#include "cli_args.h"
#include "parley.h"

namespace chat {

// Returns the process exit status (0 = success, 1 = an error was printed to stderr).
int run_one_shot(parley_engine* engine, const CliArgs& args);

}  // namespace chat
