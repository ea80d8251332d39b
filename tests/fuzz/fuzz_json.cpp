// Fuzz entry point of the JSON reply format's grammar: arbitrary bytes fed to JsonPrefix, a
// byte at a time. Invariants checked: no state it takes is a dead end (some byte always goes
// on, until the object closes); what it calls a whole object nlohmann::json reads as one
// (a number beyond a double's range aside, which JSON allows and nlohmann refuses); an object
// nlohmann reads is taken whole where none of JsonPrefix's own limits apply (no whitespace
// outside strings but spaces, at most 32 of them in a row, at most 64 brackets, no NUL);
// feeding all bytes at once agrees.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "text/json_prefix.h"

namespace {

using parley::text::JsonPrefix;

bool has_a_next_byte(const JsonPrefix& state) {
  for (int b = 0; b < 256; ++b) {
    JsonPrefix next = state;
    if (next.feed(uint8_t(b))) return true;
  }
  return false;
}

// nlohmann's reading: 1 an object, 0 not, -1 a number out of a double's range.
int reference_object(const std::string& text) {
  try {
    return nlohmann::json::parse(text).is_object() ? 1 : 0;
  } catch (const nlohmann::json::out_of_range&) {
    return -1;
  } catch (const nlohmann::json::parse_error&) {
    return 0;
  }
}

bool within_own_limits(std::string_view text) {
  size_t brackets = 0, spaces = 0, longest_spaces = 0;
  for (const char c : text) {
    // (nlohmann reads a NUL as the end of its input)
    if (c == '\t' || c == '\n' || c == '\r' || c == '\0') return false;
    if (c == '[' || c == '{') ++brackets;
    spaces = c == ' ' ? spaces + 1 : 0;
    longest_spaces = spaces > longest_spaces ? spaces : longest_spaces;
  }
  return brackets <= size_t(JsonPrefix::kMaxDepth) &&
         longest_spaces <= size_t(JsonPrefix::kMaxSpaceRun) && !text.empty() &&
         text.back() == '}';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  JsonPrefix state;
  size_t taken = 0;
  for (; taken < size; ++taken) {
    if (!state.complete() && !has_a_next_byte(state)) std::abort();  // a dead end
    JsonPrefix next = state;
    if (!next.feed(data[taken])) break;
    state = next;
  }
  if (JsonPrefix::taken_length(text) != taken) std::abort();
  const bool whole = taken == size && state.complete();
  const int reference = reference_object(text);
  if (whole && reference == 0) std::abort();
  if (!whole && reference == 1 && within_own_limits(text)) std::abort();
  return 0;
}
