// Fuzz entry point of JSON Schema replies: the input is a schema, a NUL byte, then a reply's
// bytes. The schema compiles or is refused with parley::Error (no other exception, no
// crash); a compiled one's SchemaPrefix is fed the reply a byte at a time. Invariants checked:
// no state it takes is a dead end (some byte always goes on, until the object closes); what it
// calls whole nlohmann::json reads as one object; feeding all bytes at once agrees.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"
#include "text/json_schema.h"
#include "text/schema_prefix.h"

namespace {

using parley::text::JsonSchema;
using parley::text::SchemaPrefix;

bool has_a_next_byte(const SchemaPrefix& state) {
  for (int b = 0; b < 256; ++b) {
    SchemaPrefix next = state;
    if (next.feed(uint8_t(b))) return true;
  }
  return false;
}

// nlohmann's reading: an object, or a number beyond a double's range (JSON, which nlohmann
// does not read).
bool reference_object_or_unknown(const std::string& text) {
  try {
    return nlohmann::json::parse(text).is_object();
  } catch (const nlohmann::json::out_of_range&) {
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  std::shared_ptr<const JsonSchema> schema;
  try {
    schema = JsonSchema::compile(input.substr(0, nul));
  } catch (const parley::Error&) {
    return 0;
  }
  if (nul == std::string_view::npos) return 0;
  const std::string reply(input.substr(nul + 1));
  SchemaPrefix state(schema.get());
  size_t taken = 0;
  for (; taken < reply.size(); ++taken) {
    if (!state.complete() && !has_a_next_byte(state)) std::abort();  // a dead end
    SchemaPrefix next = state;
    if (!next.feed(uint8_t(reply[taken]))) break;
    state = next;
  }
  if (taken == reply.size() && !state.complete() && !has_a_next_byte(state)) std::abort();
  if (SchemaPrefix(schema.get()).feed_taken(reply) != taken) std::abort();
  if (taken == reply.size() && state.complete() && !reference_object_or_unknown(reply)) {
    std::abort();
  }
  return 0;
}
