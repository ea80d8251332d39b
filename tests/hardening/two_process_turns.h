// What the processes of the two-process store test send, so the test can replay it.
#pragma once

#include <cstdint>
#include <string>

namespace parley::test {

constexpr uint32_t kWriterReplyTokens = 5;

inline std::string session_id(const std::string& prefix, int i) {
  return prefix + "-" + std::to_string(i);
}

// Words differ per process and session, so no two conversations share KV blocks.
inline std::string writer_turn_text(const std::string& prefix, int session, int turn) {
  static const char* words[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  return prefix + " " + words[session % 8] + " " + words[turn % 8];
}

}  // namespace parley::test
