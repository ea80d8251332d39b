#include "engine/session.h"

#include "common/error.h"
#include "engine/engine.h"
#include "text/utf8_stream.h"

namespace parley::engine {
namespace {

constexpr size_t kMaxSessionIdBytes = 127;

// Ids travel through the store listing ('\n'-separated) and file names: printable UTF-8 only.
void check_session_id(const std::string& id) {
  require(id.size() <= kMaxSessionIdBytes, Status::invalid_argument,
          "session id is " + std::to_string(id.size()) + " bytes; the limit is 127");
  require(text::is_valid_utf8(id), Status::invalid_argument, "session id is not valid UTF-8");
  for (unsigned char c : id) {
    require(c >= 0x20 && c != 0x7f, Status::invalid_argument,
            "session id contains a control character");
  }
}

}  // namespace

Session::Session(std::shared_ptr<Engine> engine, const SessionOptions& options)
    : engine_(std::move(engine)),
      system_prompt_(options.system_prompt),
      cache_scope_(options.cache_scope),
      overflow_(options.overflow),
      template_(options.chat_template.value_or(engine_->default_template()),
                engine_->tokenizer()),
      blocks_(engine_->kv_pool(), engine_->prefix_root(options.cache_scope)) {
  check_session_id(options.id);
  require(text::is_valid_utf8(system_prompt_), Status::invalid_argument,
          "system prompt is not valid UTF-8");
  const size_t start_tokens = template_.render_user_turn(system_prompt_, "", true).size();
  require(start_tokens + 1 <= engine_->context_length(), Status::context_full,
          "the system prompt takes " + std::to_string(start_tokens) +
              " tokens; the context holds " + std::to_string(engine_->context_length()));
  id_ = engine_->reserve_session_id(options.id);
  if (!system_prompt_.empty()) messages_.push_back({Role::system, system_prompt_, 0, 0, true});
}

Session::Session(const Session& source, const std::string& new_id, ForkTag)
    : engine_(source.engine_),
      system_prompt_(source.system_prompt_),
      cache_scope_(source.cache_scope_),
      overflow_(source.overflow_),
      template_(source.template_),
      messages_(source.messages_),
      tokens_(source.tokens_),
      n_cached_(source.n_cached_),
      reply_closed_(source.reply_closed_),
      blocks_(source.blocks_.fork(source.n_cached_)),
      logits_(source.logits_) {
  check_session_id(new_id);
  id_ = engine_->reserve_session_id(new_id);  // last: a throw above leaves nothing reserved
}

Session::~Session() { engine_->release_session_id(id_); }

std::unique_ptr<Session> Session::fork(const std::string& new_id) const {
  return std::unique_ptr<Session>(new Session(*this, new_id, ForkTag{}));
}

void Session::rewind(uint32_t n_messages) {
  const size_t n_system = !messages_.empty() && messages_.front().role == Role::system ? 1 : 0;
  const size_t n_droppable = messages_.size() - n_system;
  require(n_messages <= n_droppable, Status::invalid_argument,
          "cannot rewind " + std::to_string(n_messages) + " turns: the conversation has " +
              std::to_string(n_droppable) + " besides the system prompt");
  if (n_messages == 0) return;
  const size_t first_dropped = messages_.size() - n_messages;
  const uint32_t keep = messages_[first_dropped].token_begin;
  const Message* last_kept = first_dropped > n_system ? &messages_[first_dropped - 1] : nullptr;
  // After a user message the reply is missing: the next turn closes it as an empty one.
  reply_closed_ = !last_kept || (last_kept->role == Role::assistant && last_kept->closed);
  messages_.resize(first_dropped);
  tokens_.resize(keep);
  truncate_kv(keep);
}

void Session::truncate_kv(uint32_t n) {
  n_cached_ = std::min(n_cached_, n);
  blocks_.truncate(n_cached_);
}

std::vector<int32_t> Session::render_turn(std::string_view user_text) const {
  std::vector<int32_t> ids;
  if (!reply_closed_) ids = template_.close_reply();
  const bool first = tokens_.empty();
  const auto turn = template_.render_user_turn(system_prompt_, user_text, first);
  ids.insert(ids.end(), turn.begin(), turn.end());
  return ids;
}

}  // namespace parley::engine
