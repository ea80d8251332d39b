#include "engine/conversation_json.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/shown_id.h"
#include "model/json_shown.h"

namespace parley::engine {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "parley-conversation";
constexpr int kVersion = 1;
constexpr const char* kRoles[] = {"system", "user", "assistant"};  // PARLEY_ROLE_* order
// Arrays and objects one inside another: the format needs 4; more leaves room for other
// tools' extra keys. Deeper JSON is refused before it is built: the value tree and anything
// that walks it (copies, dump()) recurse once per level, and a host thread's stack is small.
constexpr int kMaxNesting = 64;
// Bytes of the parser's message kept at its start and end: "last read" quotes the whole
// token read so far, which a long string makes as long.
constexpr size_t kParserMessageHead = 120;
constexpr size_t kParserMessageTail = 80;

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

[[noreturn]] void bad(const std::string& what) {
  fail(Status::invalid_argument, "conversation JSON: " + what);
}

// Where a cut near `at` falls in valid UTF-8 `text`: the start of the character at `at`.
size_t character_start(std::string_view text, size_t at) {
  while (at > 0 && at < text.size() && (uint8_t(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

// The parser's message as one line of valid UTF-8: it quotes the bytes it read, whatever they
// are, and is cut when long. What went wrong comes before that quote and is kept whole; the
// quote keeps its end, where the parser stopped.
std::string readable_parser_message(std::string_view message) {
  const std::string line = one_line_text(message);
  if (line.size() <= kParserMessageHead + kParserMessageTail) return line;
  constexpr std::string_view kQuote = "; last read: '";
  const size_t quote = line.find(kQuote);
  if (quote != std::string::npos && quote <= kParserMessageHead + kParserMessageTail) {
    const size_t tail_start = character_start(line, line.size() - kParserMessageTail);
    const size_t quoted = quote + kQuote.size();
    if (tail_start <= quoted) return line;
    return line.substr(0, quoted) + "..." + line.substr(tail_start);
  }
  const size_t head_end = character_start(line, kParserMessageHead);
  const size_t tail_start = character_start(line, line.size() - kParserMessageTail);
  return line.substr(0, head_end) + " ... " + line.substr(tail_start);
}

// Follows the parse, event by event, for what the value tree cannot show afterwards: how deep
// it nests before it is built, and a key given twice in one object (the tree keeps the last
// one, dropping the first without a word).
class ParseWatch {
 public:
  // Throwing ends the parse (which itself does not recurse) with the tree at most kMaxNesting
  // deep.
  bool on_event(Json::parse_event_t event, const Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        open(event == Json::parse_event_t::object_start);
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        open_.pop_back();
        break;
      case Json::parse_event_t::key:
        add_key(parsed.get_ref<const std::string&>());
        break;
      case Json::parse_event_t::value:
        if (!open_.empty() && !open_.back().object) ++open_.back().n_items;
        break;
    }
    return true;
  }

 private:
  struct Container {
    bool object;
    std::string path;            // "" for the top level, else as "messages[2]"
    std::set<std::string> keys;  // an object's, so far
    std::string last_key;
    size_t n_items = 0;          // an array's, so far
  };

  void open(bool object) {
    if (open_.size() >= size_t(kMaxNesting)) {
      bad("nested too deep: more than " + std::to_string(kMaxNesting) +
          " arrays and objects one inside another");
    }
    std::string path;
    if (!open_.empty()) {
      Container& parent = open_.back();
      path = parent.object ? (parent.path.empty() ? "" : parent.path + ".") + parent.last_key
                           : parent.path + "[" + std::to_string(parent.n_items++) + "]";
    }
    open_.push_back({object, std::move(path), {}, {}, 0});
  }

  void add_key(const std::string& key) {
    Container& object = open_.back();
    if (!object.keys.insert(key).second) {
      bad(shown_id(object.path.empty() ? key : object.path + "." + key) +
          " appears twice (a key may appear once in an object)");
    }
    object.last_key = key;
  }

  std::vector<Container> open_;  // the arrays and objects the parse is inside, outermost first
};

Json parse_shallow(std::string_view json) {
  ParseWatch watch;
  const Json::parser_callback_t watched = [&watch](int, Json::parse_event_t event,
                                                   Json& parsed) {
    return watch.on_event(event, parsed);
  };
  try {
    return Json::parse(json.begin(), json.end(), watched);
  } catch (const Json::exception& e) {  // a syntax error, or a number no double holds
    bad("not valid JSON: " + readable_parser_message(e.what()));
  }
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
  if (t.role < 0) bad("'" + where + "role' is " + shown_id(role) + ": system, user or assistant");
  t.text = string_field(m, "text", where, true);
  if (const Json* closed = field(m, "closed")) {
    if (!closed->is_boolean()) bad("'" + where + "closed' is not true or false");
    t.closed = closed->get<bool>();
  } else if (t.role == 2) {
    t.closed = false;  // a reply not said to be closed is open, whether it has ids or not
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
      bad("'" + where + "tokens' holds " + model::json_shown(id) + ", not a token id");
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
  const Json j = parse_shallow(json);
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
    bad("'overflow' is " + shown_id(overflow) + ": error or drop_oldest");
  }
  const std::string fingerprint = string_field(j, "model_fingerprint", "", false);
  if (!fingerprint.empty()) c.header.model_fingerprint = parse_fingerprint(fingerprint);
  if (const Json* created = field(j, "created_unix_ms")) {
    // An unsigned value past int64's range would wrap to a negative time.
    if (!created->is_number_integer() ||
        (created->is_number_unsigned() &&
         created->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))) {
      bad("'created_unix_ms' is not an integer of 64 bits");
    }
    c.header.created_ms = created->get<int64_t>();
    c.has_created_ms = true;
  }
  const Json* messages = field(j, "messages");
  if (!messages || !messages->is_array()) bad("'messages' is missing or not an array");
  c.has_token_ids = true;
  for (size_t i = 0; i < messages->size(); ++i) {
    c.turns.push_back(read_message((*messages)[i], i, c.has_token_ids));
  }
  // Left out, the system prompt is the system message's, if there is one.
  if (!field(j, "system_prompt") && !c.turns.empty() && c.turns[0].role == 0) {
    c.header.system_prompt = c.turns[0].text;
  }
  return c;
}

}  // namespace parley::engine
