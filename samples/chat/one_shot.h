// parley-chat -p: send one message, print the reply, exit. With --store and --session the
// message continues that stored conversation and the turn is committed to it.
#pragma once

#include "cli_args.h"
#include "parley.h"

namespace chat {

// Returns the process exit status (0 = success, 1 = an error was printed to stderr, 128 + the
// signal's number after a SIGTERM or SIGHUP stopped the reply).
int run_one_shot(parley_engine* engine, const CliArgs& args);

}  // namespace chat
