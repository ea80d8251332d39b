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
  // file) and becomes current. ID is the argument's last word, or a quoted id that ends it
  // (id_quoting.h); FILE, which may hold blanks, the rest (or all of it when it names a file).
  void import_from(std::string_view arg);
};

}  // namespace chat
