// parley-chat's interactive console: several conversations, one of them current.
#pragma once

#include "cli_args.h"
#include "parley.h"

namespace chat {

// Reads messages and /commands from stdin until /quit or end of input. Returns the process
// exit status (0 = success, 1 = an error was printed to stderr).
int run_console(parley_engine* engine, const CliArgs& args);

}  // namespace chat
