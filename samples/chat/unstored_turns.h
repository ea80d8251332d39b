// A stored conversation whose turns the store refused (another program changed it there, the
// disk was full) holds them in memory only, and closing it would lose them. Before it closes,
// the commit is tried again; when the store still refuses, the conversation is exported to a
// file beside the store, "<store>.unsaved-<id>-<time>.json", which /import FILE NEWID brings
// back; when that file cannot be written (the disk is full, the folder went away), to one of
// that name in the temporary folder ($TMPDIR); failing that too, onto stderr.
#pragma once

#include <optional>
#include <string>

#include "parley.h"

namespace chat {

// For a conversation about to be closed, of an engine whose store is the file `store_path`.
// nullopt when the store holds it; else the lines to print on stderr once it is closed: that
// its turns are not stored, and which file holds them (or, when none could be written, the
// exported conversation itself between two marker lines).
std::optional<std::string> save_unstored_turns(parley_session* s, const std::string& store_path);

}  // namespace chat
