// Which files /export may replace with a conversation: not the store (--store) or the files
// SQLite keeps beside it, not the model (-m) or a file in its folder, however the path names
// them (a link, another spelling), and not an existing file that holds something other than a
// JSON object. A file /export did not write is kept.
#pragma once

#include <optional>
#include <string>

#include "cli_args.h"

namespace chat {

// Why /export must not replace `file`; nullopt when it may.
std::optional<std::string> export_refusal(const std::string& file, const CliArgs& args);

}  // namespace chat
