// The session's rows in the store: its header and its messages, committed as they finish.
#include "common/error.h"
#include "common/shown_id.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "engine/session.h"

namespace parley::engine {

store::StoredSession Session::stored_header() const {
  store::StoredSession s;
  s.id = id_;
  s.model_fingerprint = engine_->model().fingerprint;
  s.chat_template = std::string(text::template_name(template_.kind()));
  s.system_prompt = system_prompt_;
  s.cache_scope = cache_scope_;
  s.overflow = int32_t(overflow_);
  s.created_ms = created_ms_;
  s.updated_ms = unix_ms();
  return s;
}

// A message's ids run from its token_begin to the next message's (the last one's to the end
// of the conversation), so the stored turns concatenate back to the conversation's ids.
std::vector<store::StoredTurn> Session::stored_turns(size_t first) const {
  std::vector<store::StoredTurn> turns;
  for (size_t i = first; i < messages_.size(); ++i) {
    const Message& m = messages_[i];
    store::StoredTurn t;
    t.role = int32_t(m.role);
    t.text = m.text;
    t.closed = m.closed;
    if (m.role != Role::system) {
      size_t end = tokens_.size();
      for (size_t j = i + 1; j < messages_.size(); ++j) {
        if (messages_[j].role != Role::system) {
          end = messages_[j].token_begin;
          break;
        }
      }
      t.token_ids.assign(tokens_.begin() + m.token_begin, tokens_.begin() + long(end));
    }
    turns.push_back(std::move(t));
  }
  return turns;
}

void Session::commit_messages() {
  auto* store = engine_->store();
  if (!store || unstored_) return;
  write_own_rows([&] {
    if (rewrite_transcript_) {
      revision_ = store->replace_turns(id_, uint32_t(n_stored_), stored_turns(0), revision_);
      rewrite_transcript_ = false;
    } else if (n_committed_ < messages_.size() || n_committed_ < n_stored_) {
      // New turns, and a stored reply that went on since (it is rewritten in place).
      revision_ = store->replace_turns_from(id_, uint32_t(n_committed_), uint32_t(n_stored_),
                                            stored_turns(n_committed_), revision_);
    }
  });
  n_committed_ = n_stored_ = messages_.size();
}

void Session::set_overflow(OverflowPolicy overflow) {
  if (overflow == overflow_) return;
  if (auto* store = engine_->store()) {
    write_own_rows([&] { store->set_overflow(id_, int32_t(overflow), created_revision_); });
  }
  overflow_ = overflow;
}

// A store problem, not a bad argument: the message says what happened and what is kept.
void Session::fail_changed_elsewhere(const std::string& detail) const {
  throw ChangedElsewhere(Status::storage,
                         "session " + shown_id(id_) +
                             " was changed in the store by another engine; its turns here stay "
                             "in memory only (export them to keep them): " +
                             detail);
}

}  // namespace parley::engine
