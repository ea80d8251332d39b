// The interactive console and the one-shot mode of parley-chat.
#pragma once

#include "cli_args.h"
#include "parley.h"

namespace chat {

// Both return the process exit status (0 = success, 1 = an error was printed to stderr).
int run_one_shot(parley_engine* engine, const CliArgs& args);
int run_console(parley_engine* engine, const CliArgs& args);

// Prints "parley-chat: error: <what>: <parley_last_error()>" to stderr.
void print_error(const char* what, parley_status status);

}  // namespace chat
