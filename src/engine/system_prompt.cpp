// Session::set_system_prompt — a conversation goes on under a new system prompt (a character
// whose situation changed). The opening is rendered again with it and the first user
// message; every later id is kept. Positions move, so the KV is computed again by the next
// turn or prepare() (blocks another session computed for the same opening still come from the
// prefix cache).
#include <algorithm>
#include <utility>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "text/utf8_stream.h"

namespace parley::engine {

uint32_t Session::system_prefix_tokens(std::span<const int32_t> opening,
                                       std::string_view system_prompt) const {
  if (system_prompt.empty()) return 0;
  const auto system_ids = template_.render_system(system_prompt);
  const bool prefix = system_ids.size() <= opening.size() &&
                      std::equal(system_ids.begin(), system_ids.end(), opening.begin());
  return prefix ? uint32_t(system_ids.size()) : 0;
}

void Session::set_system_prompt(std::string_view system_prompt) {
  require(text::is_valid_utf8(system_prompt), Status::invalid_argument,
          "system prompt is not valid UTF-8");
  if (system_prompt == system_prompt_) return;
  const size_t n_system = !messages_.empty() && messages_.front().role == Role::system ? 1 : 0;
  const bool begun = messages_.size() > n_system;

  // The ids: the first user message opens the conversation again, with the new prompt.
  std::vector<int32_t> rebuilt;
  uint32_t first_turn_size = 0;
  uint32_t old_begin = uint32_t(tokens_.size());  // where the kept ids start in tokens_
  if (begun) {
    const Message& first_user = messages_[n_system];
    require(first_user.role == Role::user, Status::internal,
            "a conversation's first message after the system prompt is not the user's");
    rebuilt = template_.render_user_turn(system_prompt, first_user.text, true);
    first_turn_size = uint32_t(rebuilt.size());
    if (n_system + 1 < messages_.size()) old_begin = messages_[n_system + 1].token_begin;
    rebuilt.insert(rebuilt.end(), tokens_.begin() + old_begin, tokens_.end());
  }
  const uint32_t context = engine_->context_length();
  const size_t opening = template_.render_user_turn(system_prompt, "", true).size();
  const bool fits = std::max(rebuilt.size(), opening) + 1 <= context;  // and a reply's token
  // Under DROP_OLDEST the oldest exchanges make room, as they would for a message.
  const bool may_drop = overflow_ == OverflowPolicy::drop_oldest && begun && opening < context;
  const auto refuse = [&](const std::string& why) {
    fail(Status::context_full, "with this system prompt " + why + ": the context holds " +
                                   std::to_string(context) +
                                   " (the conversation is left as it was)");
  };
  if (!fits && !may_drop) {
    refuse("the conversation takes " + std::to_string(std::max(rebuilt.size(), opening)) +
           " tokens, and a reply at least 1 more");
  }

  // The messages, renumbered: the system prompt's (none for ""), then the rest as they were.
  std::vector<Message> messages;
  const uint32_t system_tokens = begun ? system_prefix_tokens(rebuilt, system_prompt) : 0;
  if (!system_prompt.empty()) {
    messages.push_back({Role::system, std::string(system_prompt), system_tokens, 0, true});
  }
  for (size_t i = n_system; i < messages_.size(); ++i) {
    Message m = messages_[i];
    if (i == n_system) {
      m.n_tokens = first_turn_size - system_tokens;
    } else {
      m.token_begin = m.token_begin - old_begin + first_turn_size;
    }
    messages.push_back(std::move(m));
  }

  // In place, then stored in one transaction with the header's prompt; a failure puts back
  // what was (the KV aside: a conversation rebuilt to make room has to compute it again).
  ConversationCopy previous = copy_conversation();
  std::string previous_prompt = std::exchange(system_prompt_, std::string(system_prompt));
  messages_ = std::move(messages);
  tokens_ = std::move(rebuilt);
  const auto put_back_previous = [&] {
    system_prompt_ = std::move(previous_prompt);
    put_back(std::move(previous));
  };
  std::vector<int32_t> nothing_new;
  if (!fits && !drop_oldest_to_fit(nullptr, nothing_new, 1)) {
    put_back_previous();
    refuse("the conversation does not fit even with every exchange before the last message "
           "dropped");
  }
  if (auto* store = engine_->store()) {
    try {
      write_own_rows([&] {
        revision_ = store->replace_turns(id_, uint32_t(n_stored_), system_prompt_, stored_turns(0),
                                         revision_);
      });
    } catch (...) {
      put_back_previous();
      throw;
    }
    n_committed_ = n_stored_ = messages_.size();
    rewrite_transcript_ = false;
  }
  // The KV held the old ids (the store's was dropped with its turns).
  truncate_kv(0);
  opening_.reset();
  spilled_ = false;
}

}  // namespace parley::engine
