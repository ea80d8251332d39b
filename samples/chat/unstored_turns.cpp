#include "unstored_turns.h"

#include <ctime>
#include <filesystem>
#include <string_view>
#include <vector>

#include "file_replace.h"
#include "id_quoting.h"
#include "sessions.h"

namespace chat {
namespace {

constexpr const char* kExportBegins = "----- parley conversation (JSON) -----";
constexpr const char* kExportEnds = "----- end of the conversation -----";

// The id as part of a file name: a character other than a letter, digit, '-', '_' or '.'
// becomes '_', so that the file lands beside the store whatever the id holds ("a/b").
std::string file_part(std::string_view id) {
  std::string part;
  for (const char c : id) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
    part += plain ? c : '_';
  }
  return part;
}

// Now, as "20261206-063000" (UTC).
std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  char buf[32];
  if (!gmtime_r(&now, &tm) || !std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm)) return "0";
  return buf;
}

// "<folder>/<name>.unsaved-<id>-<time>.json"; "-2.json" and so on when such a file is there
// (two conversations with ids alike as file names, closed in the same second): none is replaced.
std::string unsaved_path(const std::filesystem::path& folder, const std::string& name,
                         const std::string& id) {
  const std::string base =
      (folder / (name + ".unsaved-" + file_part(id) + "-" + utc_stamp())).string();
  std::string path = base + ".json";
  std::error_code ec;
  for (int n = 2; std::filesystem::exists(path, ec) && n < 1000; ++n) {
    path = base + "-" + std::to_string(n) + ".json";
  }
  return path;
}

// The folders to try, in order: the store's own, then the temporary one ($TMPDIR), which is
// often elsewhere when the store's disk is full or its folder went away.
std::vector<std::filesystem::path> unsaved_folders(const std::string& store_path) {
  const std::filesystem::path own = std::filesystem::path(store_path).parent_path();
  std::vector<std::filesystem::path> folders{own};  // "" for the current folder, as named
  std::error_code ec;
  const std::filesystem::path temp = std::filesystem::temp_directory_path(ec);
  if (!ec && !std::filesystem::equivalent(temp, own.empty() ? "." : own, ec)) {
    folders.push_back(temp);
  }
  return folders;
}

}  // namespace

std::optional<std::string> save_unstored_turns(parley_session* s, const std::string& store_path) {
  // Commits a turn the store refused before. A failure to store the KV after the turns went
  // in cannot be told apart: the file is written then too, which costs nothing but a file.
  const parley_status st = parley_session_suspend(s);
  if (st == PARLEY_OK || st == PARLEY_E_UNSUPPORTED) return std::nullopt;
  const std::string id = session_id(s, nullptr).value_or("?");
  std::string said = "parley-chat: error: the store refused the turns of session " + shown_id(id) +
                     ", so they are not stored there";
  std::string json;
  if (export_json(s, &json) != PARLEY_OK) {
    return said + "; exporting them failed too (" + parley_last_error() + "): they are lost\n";
  }
  const std::string name = std::filesystem::path(store_path).filename().string();
  for (const auto& folder : unsaved_folders(store_path)) {
    const std::string path = unsaved_path(folder, name, id);
    if (const auto why = replace_file(path, json)) {
      said += "; writing them to " + path + " failed too (" + *why + ")";
      continue;
    }
    // Under a new id: the store's conversation keeps its own.
    return said + "; the conversation is saved in " + path + " instead (in the console, " +
           "/import " + path + " NEWID goes on with it)\n";
  }
  // No file could hold it: the terminal (or the log stderr goes to) does.
  return said + "; here it is, to be saved as a file and brought back with /import FILE " +
         "NEWID:\n" + kExportBegins + "\n" + json + "\n" + kExportEnds + "\n";
}

}  // namespace chat
