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
      template_(options.chat_template.value_or(engine_->default_template()),
                engine_->tokenizer()) {
  check_session_id(options.id);
  require(text::is_valid_utf8(system_prompt_), Status::invalid_argument,
          "system prompt is not valid UTF-8");
  const size_t start_tokens = template_.render_user_turn(system_prompt_, "", true).size();
  require(start_tokens + 1 <= engine_->context_length(), Status::context_full,
          "the system prompt takes " + std::to_string(start_tokens) +
              " tokens; the context holds " + std::to_string(engine_->context_length()));
  id_ = engine_->reserve_session_id(options.id);
  if (!system_prompt_.empty()) messages_.push_back({Role::system, system_prompt_, 0});
}

Session::~Session() {
  if (kv_) engine_->release_kv(*kv_);
  engine_->release_session_id(id_);
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
