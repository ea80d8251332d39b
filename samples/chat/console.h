// parley-chat's interactive console: several conversations, one of them current.
#pragma once

#include "cli_args.h"
#include "parley.h"

namespace chat {

// Reads messages and /commands from stdin until /quit or end of input (or until stdout cannot
// be written, or a SIGTERM or SIGHUP came: it stops a reply as Ctrl-C does, then the console
// ends as at the end of input). Returns the process exit status: 128 + the signal's number
// after such a signal; else 0, or 1 when the console could not start, its output was lost, or
// the store refused a conversation's turns (each said on stderr); a refused message or command
// does not count.
int run_console(parley_engine* engine, const CliArgs& args);

}  // namespace chat
