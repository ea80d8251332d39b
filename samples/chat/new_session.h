// Starting a conversation the way the command line asks (template flag, system prompt).
#pragma once

#include <string>

#include "cli_args.h"
#include "parley.h"

namespace chat {

// `id` NULL: the library generates one. An empty system prompt means none.
parley_status create_session(parley_engine* engine, const CliArgs& args,
                             const std::string& system_prompt, const char* id,
                             parley_session** out);

}  // namespace chat
