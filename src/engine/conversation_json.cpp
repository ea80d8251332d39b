#include "engine/conversation_json.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <limits>

#include "common/error.h"

namespace parley::engine {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "parley-conversation";
constexpr int kVersion = 1;
constexpr const char* kRoles[] = {"system", "user", "assistant"};  // PARLEY_ROLE_* order

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

[[noreturn]] void bad(const std::string& what) {
  fail(Status::invalid_argument, "conversation JSON: " + what);
}

const Json* field(const Json& object, const char* name) {
  const auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string string_field(const Json& object, const char* name, const std::string& where,
                         bool required) {
  const Json* v = field(object, name);
  if (!v) {
    if (required) bad("'" + where + name + "' is missing");
    return "";
  }
  if (!v->is_string()) bad("'" + where + name + "' is not a string");
  std::string text = v->get<std::string>();
  // Texts and ids come back through the C ABI as C strings.
  if (text.find('\0') != std::string::npos) bad("'" + where + name + "' holds a NUL character");
  return text;
}

uint64_t parse_fingerprint(const std::string& hex) {
  if (hex.empty() || hex.size() > 16) bad("'model_fingerprint' is not 1 to 16 hex digits");
  uint64_t v = 0;
  for (char c : hex) {
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) bad("'model_fingerprint' is not 1 to 16 hex digits");
    v = v << 4 | uint64_t(d);
  }
  return v;
}

store::StoredTurn read_message(const Json& m, size_t index, bool& has_ids) {
  const std::string where = "messages[" + std::to_string(index) + "].";
  if (!m.is_object()) bad("'messages[" + std::to_string(index) + "]' is not an object");
  store::StoredTurn t;
  const std::string role = string_field(m, "role", where, true);
  t.role = -1;
  for (int r = 0; r < 3; ++r) {
    if (role == kRoles[r]) t.role = r;
  }
  if (t.role < 0) bad("'" + where + "role' is \"" + role + "\": system, user or assistant");
  t.text = string_field(m, "text", where, true);
  if (const Json* closed = field(m, "closed")) {
    if (!closed->is_boolean()) bad("'" + where + "closed' is not true or false");
    t.closed = closed->get<bool>();
  }
  const Json* ids = field(m, "tokens");
  if (!ids) {
    has_ids = has_ids && t.role == 0;  // the system message has no ids of its own
    return t;
  }
  if (!ids->is_array()) bad("'" + where + "tokens' is not an array");
  t.token_ids.reserve(ids->size());
  for (const Json& id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      bad("'" + where + "tokens' holds " + id.dump() + ", not a token id");
    }
    t.token_ids.push_back(int32_t(id.get<int64_t>()));
  }
  return t;
}

}  // namespace

std::string write_conversation_json(const store::StoredSession& header,
                                    const std::vector<store::StoredTurn>& turns) {
  Json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["id"] = header.id;
  j["chat_template"] = header.chat_template;
  j["system_prompt"] = header.system_prompt;
  j["cache_scope"] = header.cache_scope;
  j["overflow"] = header.overflow == 1 ? "drop_oldest" : "error";
  j["model_fingerprint"] = hex64(header.model_fingerprint);
  j["created_unix_ms"] = header.created_ms;
  Json messages = Json::array();
  for (const auto& t : turns) {
    Json m;
    m["role"] = kRoles[t.role];
    m["text"] = t.text;
    if (t.role != 0) m["tokens"] = t.token_ids;
    if (t.role == 2) m["closed"] = t.closed;
    messages.push_back(std::move(m));
  }
  j["messages"] = std::move(messages);
  return j.dump();
}

ConversationJson read_conversation_json(std::string_view json) {
  Json j;
  try {
    j = Json::parse(json.begin(), json.end());
  } catch (const Json::exception& e) {  // a syntax error, or a number no double holds
    bad(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad("not an object");
  if (string_field(j, "format", "", true) != kFormat) {
    bad(std::string("'format' is not \"") + kFormat + "\"");
  }
  const Json* version = field(j, "version");
  if (!version || !version->is_number_integer()) bad("'version' is missing or not an integer");
  if (version->get<int64_t>() < 1 || version->get<int64_t>() > kVersion) {
    bad("version " + version->dump() + " is not one this library reads (1)");
  }
  ConversationJson c;
  c.header.id = string_field(j, "id", "", false);
  c.header.chat_template = string_field(j, "chat_template", "", true);
  c.header.system_prompt = string_field(j, "system_prompt", "", false);
  c.header.cache_scope = string_field(j, "cache_scope", "", false);
  const std::string overflow = string_field(j, "overflow", "", false);
  if (overflow == "drop_oldest") {
    c.header.overflow = 1;
  } else if (!overflow.empty() && overflow != "error") {
    bad("'overflow' is \"" + overflow + "\": error or drop_oldest");
  }
  const std::string fingerprint = string_field(j, "model_fingerprint", "", false);
  if (!fingerprint.empty()) c.header.model_fingerprint = parse_fingerprint(fingerprint);
  if (const Json* created = field(j, "created_unix_ms")) {
    if (!created->is_number_integer()) bad("'created_unix_ms' is not an integer");
    c.header.created_ms = created->get<int64_t>();
    c.has_created_ms = true;
  }
  const Json* messages = field(j, "messages");
  if (!messages || !messages->is_array()) bad("'messages' is missing or not an array");
  c.has_token_ids = true;
  for (size_t i = 0; i < messages->size(); ++i) {
    c.turns.push_back(read_message((*messages)[i], i, c.has_token_ids));
    c.closed_given.push_back(field((*messages)[i], "closed") != nullptr);
  }
  return c;
}

}  // namespace parley::engine
