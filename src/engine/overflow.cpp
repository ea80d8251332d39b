// Session::drop_oldest_to_fit — the DROP_OLDEST overflow policy: forget the oldest exchanges
// (the system prompt stays) until the new turn fits, and rebuild the conversation from the
// ids it already has. Positions move, so its KV is computed again (shared prefix blocks, such
// as the system prompt's, still come from the cache).
#include <algorithm>
#include <optional>
#include <utility>

#include "engine/engine.h"
#include "engine/session.h"

namespace parley::engine {

std::optional<Session::ConversationCopy> Session::drop_oldest_to_fit(
    const std::string_view* user_text, std::vector<int32_t>& new_ids, size_t reply_room) {
  const uint32_t context = engine_->context_length();
  const size_t n_system = !messages_.empty() && messages_.front().role == Role::system ? 1 : 0;
  std::vector<size_t> user_messages;
  for (size_t i = n_system; i < messages_.size(); ++i) {
    if (messages_[i].role == Role::user) user_messages.push_back(i);
  }

  // Without a new message, the last user message (the one being replied to) stays.
  const size_t droppable = user_messages.size() - (user_text || user_messages.empty() ? 0 : 1);
  for (size_t dropped = 1; dropped <= droppable; ++dropped) {
    std::vector<int32_t> rebuilt;
    std::vector<int32_t> turn;
    size_t first_kept = messages_.size();
    uint32_t old_begin = uint32_t(tokens_.size());  // where the kept ids start in tokens_
    if (dropped < user_messages.size()) {
      // The first kept user message opens the conversation again (with the system prompt);
      // everything after it keeps the ids it has.
      first_kept = user_messages[dropped];
      rebuilt = template_.render_user_turn(system_prompt_, messages_[first_kept].text, true);
      old_begin = first_kept + 1 < messages_.size() ? messages_[first_kept + 1].token_begin
                                                     : uint32_t(tokens_.size());
      rebuilt.insert(rebuilt.end(), tokens_.begin() + old_begin, tokens_.end());
      turn = new_ids;  // the new turn follows the same last reply as before
    } else {
      turn = template_.render_user_turn(system_prompt_, *user_text, true);
    }
    if (rebuilt.size() + turn.size() + reply_room > context) continue;

    // Apply: renumber the kept messages, forget the dropped ones and all KV.
    const uint32_t first_turn_size = first_kept < messages_.size()
                                         ? uint32_t(rebuilt.size() - (tokens_.size() - old_begin))
                                         : 0;
    const uint32_t system_tokens = n_system && first_kept < messages_.size()
                                       ? system_prefix_tokens(rebuilt, system_prompt_)
                                       : 0;
    std::vector<Message> kept(messages_.begin(), messages_.begin() + long(n_system));
    if (n_system) kept.front().n_tokens = system_tokens;
    for (size_t i = first_kept; i < messages_.size(); ++i) {
      Message m = messages_[i];
      if (i == first_kept) {
        m.token_begin = 0;
        m.n_tokens = first_turn_size - system_tokens;
      } else {
        m.token_begin = m.token_begin - old_begin + first_turn_size;
      }
      kept.push_back(std::move(m));
    }
    ConversationCopy before{std::exchange(messages_, std::move(kept)),
                            std::exchange(tokens_, std::move(rebuilt)), reply_closed_,
                            rewrite_transcript_};
    truncate_kv(0);
    rewrite_transcript_ = true;  // the store's turns no longer concatenate to these ids
    if (tokens_.empty()) reply_closed_ = true;  // every exchange went: no reply to close
    new_ids = std::move(turn);
    return before;
  }
  return std::nullopt;
}

}  // namespace parley::engine
