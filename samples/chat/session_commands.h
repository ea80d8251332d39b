// The console commands that start, switch, copy, cut, re-prompt, replace, close and list
// conversations. Each prints its outcome; a command that fails changes nothing.
#pragma once

#include <string_view>

#include "cli_args.h"
#include "parley.h"
#include "sessions.h"

namespace chat {

struct SessionCommands {
  parley_engine* engine;
  const CliArgs& args;  // template and system prompt flags for new sessions
  Sessions& sessions;

  // /new [ID]: a fresh conversation from the command line's flags; it becomes current.
  void start_new(std::string_view id);
  // /switch ID
  void switch_to(std::string_view id);
  // /fork [ID]: a copy of the current conversation; the copy becomes current.
  void fork(std::string_view id);
  // /rewind N: drops the last N messages of the current conversation.
  void rewind(std::string_view count);
  // /system [TEXT]: the current conversation goes on under TEXT as its system prompt, every
  // message kept; without TEXT it goes on without one.
  void set_system_prompt(std::string_view text);
  // /reset: a fresh conversation with the current one's system prompt replaces it, which is
  // closed.
  void reset();
  // /sessions: the open conversations with their state and KV bytes.
  void list() const;
  // /close ID: closes an open conversation (with a store its KV is spilled there); the last
  // open one stays.
  void close(std::string_view id);
};

}  // namespace chat
