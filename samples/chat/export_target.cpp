#include "export_target.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace chat {
namespace {

// Whether `a` and `b` name one file: the same file where both exist (through a link or
// another spelling of the path), else the same path once the links in it are resolved.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  const fs::path canonical_a = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path canonical_b = fs::weakly_canonical(b, ec);
  return !ec && canonical_a == canonical_b;
}

// Why `file` is the store or one of the files SQLite keeps beside it, which an export would
// destroy; nullopt when it is none of them. The companions are named after the store's path
// as given and after the file a link there names, so both spellings are checked.
std::optional<std::string> store_refusal(const std::string& file, const std::string& store) {
  std::error_code ec;
  const std::string resolved = std::filesystem::weakly_canonical(store, ec).string();
  for (const std::string& base : {store, ec ? store : resolved}) {
    if (same_file(file, base)) return "it is the conversation store (--store)";
    for (const char* companion : {"-wal", "-shm", "-journal"}) {
      if (same_file(file, base + companion)) {
        return std::string("it is the conversation store's ") + companion + " file (--store)";
      }
    }
  }
  return std::nullopt;
}

// Whether `file` is in the folder `dir` or one below it; then a model loading from `dir`
// may read it, also a file not there yet (tokenizer_config.json changes a model's tokens).
bool is_inside(const std::filesystem::path& file, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path folder = fs::canonical(dir, ec);
  if (ec) return false;
  const fs::path resolved = fs::weakly_canonical(file, ec);
  if (ec) return false;
  return std::mismatch(folder.begin(), folder.end(), resolved.begin(), resolved.end()).first ==
         folder.end();
}

// Whether `file` is one of the files in the folder `dir` under another name (a hard link).
bool links_into(const std::filesystem::path& file, const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (std::filesystem::equivalent(file, entry.path(), ec)) return true;
  }
  return false;
}

// Why `file` is the model -m names or a file of its folder; nullopt when it is not.
std::optional<std::string> model_refusal(const std::string& file, const std::string& model) {
  if (same_file(file, model)) return "it is the model (-m)";
  std::error_code ec;
  if (!std::filesystem::is_directory(model, ec)) return std::nullopt;
  if (is_inside(file, model) || links_into(file, model)) {
    return "it is in the model's folder (-m), which /export never writes into";
  }
  return std::nullopt;
}

// Why the existing regular file `file` is not one /export may replace: it holds something
// other than a JSON object (a database, a model, a text), which an export would destroy. A
// file that is empty or blank holds nothing to lose. nullopt when it may be replaced.
std::optional<std::string> content_refusal(const std::string& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return std::nullopt;  // replace_file says
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return std::string("cannot read it to see that it holds a conversation: ") +
           std::strerror(errno);
  }
  std::string start(3, '\0');
  in.read(start.data(), 3);
  if (start != "\xEF\xBB\xBF") {  // an editor's byte-order mark comes before the JSON
    in.clear();
    in.seekg(0);
  }
  char c = 0;
  while (in.get(c) && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
  }
  if (!in || c == '{') return std::nullopt;
  return "it is not a conversation file (it holds no JSON object), which /export never replaces";
}

}  // namespace

std::optional<std::string> export_refusal(const std::string& file, const CliArgs& args) {
  if (args.store_path) {
    if (auto why = store_refusal(file, *args.store_path)) return why;
  }
  if (auto why = model_refusal(file, args.model)) return why;
  return content_refusal(file);
}

}  // namespace chat
