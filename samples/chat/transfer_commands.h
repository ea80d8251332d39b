// The console commands that carry a conversation out to a file as portable JSON and back in
// as a new conversation: a save file, or a conversation for another machine or model. Each
// prints its outcome; a command that fails changes nothing.
#pragma once

#include <string_view>

#include "parley.h"
#include "sessions.h"

namespace chat {

struct TransferCommands {
  parley_engine* engine;
  Sessions& sessions;

  // /export FILE: the current conversation's JSON replaces what FILE held.
  void export_to(std::string_view path);
  // /import FILE [ID]: the conversation in FILE joins the console under ID (or the id in the
  // file) and becomes current. FILE is the argument's first word.
  void import_from(std::string_view arg);
};

}  // namespace chat
