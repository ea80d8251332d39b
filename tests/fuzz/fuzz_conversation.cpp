// Fuzz entry point of conversation JSON (parley_session_import's input): arbitrary bytes read
// as a conversation. Invariants checked: a refusal is Error(invalid_argument), never another
// exception; what is read writes back to JSON that reads back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.h"
#include "engine/conversation_json.h"

namespace {

using namespace parley;

bool same(const engine::ConversationJson& a, const engine::ConversationJson& b) {
  const auto& x = a.header;
  const auto& y = b.header;
  if (x.id != y.id || x.chat_template != y.chat_template || x.system_prompt != y.system_prompt ||
      x.cache_scope != y.cache_scope || x.overflow != y.overflow ||
      x.model_fingerprint != y.model_fingerprint || x.created_ms != y.created_ms ||
      a.turns.size() != b.turns.size()) {
    return false;
  }
  for (size_t i = 0; i < a.turns.size(); ++i) {
    const auto& s = a.turns[i];
    const auto& t = b.turns[i];
    if (s.role != t.role || s.text != t.text) return false;
    // The writer gives ids to messages other than the system's, and `closed` to replies.
    if (s.role != 0 && s.token_ids != t.token_ids) return false;
    if (s.role == 2 && s.closed != t.closed) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  engine::ConversationJson read;
  try {
    read = engine::read_conversation_json(json);
  } catch (const Error& e) {
    if (e.status() != Status::invalid_argument) std::abort();
    return 0;
  }
  const std::string written = engine::write_conversation_json(read.header, read.turns);
  if (!same(read, engine::read_conversation_json(written))) std::abort();
  return 0;
}
