// The console commands that carry a conversation out to a file as portable JSON and back in
// as a new conversation: a save file, or a conversation for another machine or model. Each
// prints its outcome; a command that fails changes nothing.
#pragma once

#include <string_view>

#include "cli_args.h"
#include "parley.h"
#include "sessions.h"

namespace chat {

struct TransferCommands {
  parley_engine* engine;
  const CliArgs& args;  // the store and the model, which /export never replaces
  Sessions& sessions;

  // /export FILE: the current conversation's JSON replaces what FILE held. Refused (said) for
  // the store (--store) and the files SQLite keeps beside it, the model (-m) or a file in its
  // folder, however the path names them (a link, another spelling), and for an existing file
  // that holds something other than a JSON object: a file /export did not write is kept.
  void export_to(std::string_view path);
  // /import FILE [ID]: the conversation in FILE joins the console under ID (or the id in the
  // file) and becomes current. ID is the argument's last word, or a quoted id that ends it
  // (id_quoting.h); FILE, which may hold blanks, the rest (or all of it when it names a file).
  void import_from(std::string_view arg);
};

}  // namespace chat
