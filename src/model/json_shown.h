// A JSON value from a file, as an error message shows it.
#pragma once

#include <cstddef>
#include <string>

namespace parley::model {

inline constexpr size_t kShownJsonStringBytes = 64;

// Numbers, booleans and null as written; a string quoted (cut after kShownJsonStringBytes
// bytes); arrays and objects by kind alone. dump() is not used on what a file holds: it may be
// huge, and it recurses once per level of nesting, which a crafted file makes deep enough to
// overflow the stack.
template <class Json>
std::string json_shown(const Json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (!v.is_string()) return v.dump();
  const auto& s = v.template get_ref<const std::string&>();
  if (s.size() <= kShownJsonStringBytes) return "\"" + s + "\"";
  return "\"" + s.substr(0, kShownJsonStringBytes) + "...\"";
}

}  // namespace parley::model
