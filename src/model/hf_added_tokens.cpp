#include "model/hf_added_tokens.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/error.h"
#include "common/log.h"
#include "model/json_shown.h"
#include "model/text_file.h"

namespace parley::model {

namespace {

using json = nlohmann::json;

constexpr std::string_view kTokenizerConfigFile = "tokenizer_config.json";
constexpr std::string_view kTokenizerJsonFile = "tokenizer.json";
constexpr std::string_view kAddedTokensFile = "added_tokens.json";
constexpr std::string_view kSpecialTokensMapFile = "special_tokens_map.json";
constexpr size_t kMaxJsonBytes = 16u * 1000u * 1000u;
// tokenizer.json holds a whole vocabulary and its merges: larger than the other files.
constexpr size_t kMaxTokenizerJsonBytes = 64u * 1000u * 1000u;

[[noreturn]] void bad_in(std::string_view file, const std::string& what) {
  fail(Status::bad_model, std::string(file) + ": " + what);
}

json parse_object(std::string_view text, std::string_view file) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) bad_in(file, "not a JSON object");
  return j;
}

int32_t token_id(const json& v, std::string_view file, const std::string& where) {
  const bool fits = v.is_number_integer() && v.get<int64_t>() >= 0 &&
                    v.get<int64_t>() <= std::numeric_limits<int32_t>::max();
  if (!fits) bad_in(file, where + " id " + json_shown(v) + " is not a token id");
  return int32_t(v.get<int64_t>());
}

int32_t token_id_key(std::string_view key, std::string_view file, const std::string& where) {
  int32_t id = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
  if (ec != std::errc() || end != key.data() + key.size() || id < 0) {
    bad_in(file, where + " key '" + std::string(key) + "' is not a token id");
  }
  return id;
}

std::string content_of(const json& entry, std::string_view file, const std::string& where) {
  const auto it = entry.find("content");
  if (it == entry.end() || !it->is_string() || it->get<std::string>().empty()) {
    bad_in(file, where + " has no content string");
  }
  return it->get<std::string>();
}

bool special_of(const json& entry) {
  const auto it = entry.find("special");
  return it != entry.end() && it->is_boolean() && it->get<bool>();
}

// special_tokens_map.json's values are strings, {"content": ...} objects, or lists of them
// (one level: deeper lists are no such value, and a crafted file could nest them deep enough to
// overflow the stack).
void collect_special_contents(const json& v, std::set<std::string>& out, bool in_list = false) {
  if (v.is_string()) out.insert(v.get<std::string>());
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    out.insert(v["content"].get<std::string>());
  }
  if (v.is_array() && !in_list) {
    for (const json& item : v) collect_special_contents(item, out, true);
  }
}

void sort_by_id(std::vector<AddedToken>& tokens) {
  std::sort(tokens.begin(), tokens.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
}

}  // namespace

std::optional<std::vector<AddedToken>> added_tokens_from_tokenizer_config(std::string_view text) {
  const json j = parse_object(text, kTokenizerConfigFile);
  const auto decoder = j.find("added_tokens_decoder");
  if (decoder == j.end() || decoder->is_null()) return std::nullopt;
  if (!decoder->is_object()) bad_in(kTokenizerConfigFile, "added_tokens_decoder is not an object");
  std::vector<AddedToken> tokens;
  for (const auto& [key, entry] : decoder->items()) {
    const std::string where = "added_tokens_decoder[\"" + key + "\"]";
    if (!entry.is_object()) bad_in(kTokenizerConfigFile, where + " is not an object");
    tokens.push_back({token_id_key(key, kTokenizerConfigFile, "added_tokens_decoder"),
                      content_of(entry, kTokenizerConfigFile, where), special_of(entry)});
  }
  return tokens;
}

std::optional<std::vector<AddedToken>> added_tokens_from_tokenizer_json(std::string_view text) {
  const json j = parse_object(text, kTokenizerJsonFile);
  const auto added = j.find("added_tokens");
  if (added == j.end() || added->is_null()) return std::nullopt;
  if (!added->is_array()) bad_in(kTokenizerJsonFile, "added_tokens is not a list");
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < added->size(); ++i) {
    const json& entry = (*added)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("id")) {
      bad_in(kTokenizerJsonFile, where + " is not an object with an id");
    }
    tokens.push_back({token_id(entry["id"], kTokenizerJsonFile, where),
                      content_of(entry, kTokenizerJsonFile, where), special_of(entry)});
  }
  return tokens;
}

std::vector<AddedToken> added_tokens_from_added_tokens_json(std::string_view text,
                                                            std::string_view special_map_json) {
  std::set<std::string> specials;
  if (!special_map_json.empty()) {
    const json special_map = parse_object(special_map_json, kSpecialTokensMapFile);
    for (const auto& [key, value] : special_map.items()) collect_special_contents(value, specials);
  }
  const json ids = parse_object(text, kAddedTokensFile);
  std::vector<AddedToken> tokens;
  for (const auto& [content, id] : ids.items()) {
    if (content.empty()) bad_in(kAddedTokensFile, "a token's content is empty");
    tokens.push_back({token_id(id, kAddedTokensFile, "'" + content + "'"), content,
                      specials.count(content) > 0});
  }
  return tokens;
}

namespace {

// tokenizer.json, added_tokens.json and special_tokens_map.json may be left out, and versions
// before 0.9 never read them: one that holds no JSON at all (a Git LFS pointer, blank lines)
// is left out with a warning, so that a model that loaded before still does. One that is
// JSON but malformed is still refused.
std::string optional_json_text(const std::filesystem::path& path, size_t max_bytes) {
  std::string text;
  try {
    text = read_optional_text_file(path, max_bytes);
  } catch (const Error& e) {
    if (e.status() != Status::bad_model) throw;
    log::warn_line(std::string(e.what()) + "; left out");
    return {};
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const size_t start = text.compare(first, 3, "\xEF\xBB\xBF") == 0 ? first + 3 : first;
  const bool json_like = start < text.size() && (text[start] == '{' || text[start] == '[');
  if (!json_like) {
    log::warn_line("'" + path.string() + "' holds no JSON; left out");
    return {};
  }
  return text;
}

}  // namespace

AddedPieces read_added_tokens(const std::filesystem::path& dir, std::string_view tokenizer_config) {
  AddedPieces added;
  std::optional<std::vector<AddedToken>> tokens;
  if (!tokenizer_config.empty()) {
    tokens = added_tokens_from_tokenizer_config(tokenizer_config);
    added.tokens_file = kTokenizerConfigFile;
  }
  if (!tokens) {
    const std::string text = optional_json_text(dir / kTokenizerJsonFile, kMaxTokenizerJsonBytes);
    if (!text.empty()) tokens = added_tokens_from_tokenizer_json(text);
    added.tokens_file = kTokenizerJsonFile;
  }
  if (!tokens) {
    const std::string text = optional_json_text(dir / kAddedTokensFile, kMaxJsonBytes);
    if (text.empty()) return {};
    tokens = added_tokens_from_added_tokens_json(
        text, optional_json_text(dir / kSpecialTokensMapFile, kMaxJsonBytes));
    added.tokens_file = kAddedTokensFile;
  }
  added.tokens = std::move(*tokens);
  sort_by_id(added.tokens);
  return added;
}

}  // namespace parley::model
