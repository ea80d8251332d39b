// Starting a conversation the way the command line asks (template flag, system prompt, and
// --session with or without --store).
#pragma once

#include <string>

#include "cli_args.h"
#include "parley.h"

namespace chat {

// `id` NULL: the library generates one. An empty system prompt means none.
parley_status create_session(parley_engine* engine, const CliArgs& args,
                             const std::string& system_prompt, const char* id,
                             parley_session** out);

// The stored conversation `id`; with --overflow, it takes that policy (else it keeps its own).
parley_status open_stored_session(parley_engine* engine, const CliArgs& args, const char* id,
                                  parley_session** out);

// A new conversation with `system_prompt` and the template and overflow policy of `like`
// (/reset: the same conversation afresh).
parley_status create_session_like(parley_engine* engine, parley_session* like,
                                  const std::string& system_prompt, parley_session** out);

// The conversation a run starts in. With --store and --session ID: the stored conversation ID
// when there is one (`*reopened` true), else a new one with that id. Without --store,
// --session only names the new conversation.
parley_status start_first_session(parley_engine* engine, const CliArgs& args,
                                  parley_session** out, bool* reopened);

}  // namespace chat
