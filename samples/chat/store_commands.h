// The console commands that work with the session store (--store): reopen a stored
// conversation, move one's KV to the store, delete one, and list those not open here. Each
// prints its outcome; a command that fails changes nothing.
#pragma once

#include <string_view>

#include "cli_args.h"
#include "parley.h"
#include "sessions.h"

namespace chat {

struct StoreCommands {
  parley_engine* engine;
  const CliArgs& args;
  Sessions& sessions;

  // /open ID: the stored conversation ID joins the console and becomes current; one already
  // open here is just switched to.
  void open(std::string_view id);
  // /suspend: the current conversation's KV goes to the store; the next message brings it back.
  void suspend();
  // /delete ID: removes a stored conversation that is not open here.
  void remove(std::string_view id);
  // The second part of /sessions: stored conversations not open here (nothing without a store).
  void list_not_open() const;
};

// Prints "(session ID: N turns from the store)" for the current session.
void announce_reopened(Sessions& sessions);

}  // namespace chat
