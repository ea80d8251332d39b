// A minimal session row for store tests: an id, the raw template, fixed timestamps.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace parley::test
