// A minimal session row for store tests: an id, the raw template, fixed timestamps; and
// blob bytes that differ with their seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace parley::test {

inline store::StoredSession session_named(const std::string& id, int64_t time_ms = 1) {
  store::StoredSession s;
  s.id = id;
  s.chat_template = "raw";
  s.created_ms = time_ms;
  s.updated_ms = time_ms;
  return s;
}

inline std::vector<std::byte> patterned_bytes(size_t n, uint8_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(seed + i * 7);
  return v;
}

}  // namespace parley::test
