// Session: one conversation — its messages, its token ids and the KV cache that holds them.
// Used by one thread at a time (the C ABI enforces that); interrupt() may come from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_cache.h"
#include "sample/sampler.h"
#include "text/chat_template.h"

namespace parley::engine {

class Engine;

enum class Role : int32_t { system = 0, user = 1, assistant = 2 };      // PARLEY_ROLE_*
enum class KvSource : int32_t { fresh = 0, resident = 1, restored = 2, rebuilt = 3 };

struct SessionOptions {
  std::string id;                                  // "" = generate one
  std::string system_prompt;
  std::optional<text::TemplateKind> chat_template;  // nullopt = the model's
  std::string cache_scope;
};

struct GenerateParams {
  sample::SamplerParams sampler;
  uint64_t seed = 0;          // 0 = a fresh random seed
  uint32_t max_tokens = 256;  // 0 = up to the end of the context
  bool ignore_eos = false;
};

struct TurnStats {
  uint32_t prompt_tokens = 0;
  uint32_t reused_tokens = 0;
  uint32_t computed_tokens = 0;
  uint32_t generated_tokens = 0;
  double ttft_ms = 0;
  double tpot_ms = 0;
  double restore_ms = 0;
  KvSource kv_source = KvSource::fresh;
};

struct Message {
  Role role;
  std::string text;
  uint32_t n_tokens = 0;  // tokens this message took in the conversation
};

// Receives whole UTF-8 code points of the reply; returns false to stop.
using TextSink = std::function<bool(std::string_view)>;

class Session {
 public:
  // Throws Error: invalid_argument (bad id, invalid UTF-8), context_full (the system prompt
  // alone does not fit).
  Session(std::shared_ptr<Engine> engine, const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Adds a user message and generates the reply (turn.cpp). On Error(cancelled) the partial
  // reply is kept as the turn; on any other error the session is left as it was.
  void send(std::string_view user_text, const GenerateParams& params, const TextSink& sink,
            TurnStats& stats);

  // Makes a running send() stop at its next token. Any thread.
  void interrupt() { interrupt_.store(true, std::memory_order_relaxed); }

  const std::string& id() const { return id_; }
  const std::vector<Message>& messages() const { return messages_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  uint64_t kv_bytes_resident() const { return kv_ ? kv_->bytes() : 0; }
  text::TemplateKind template_kind() const { return template_.kind(); }

 private:
  // The ids to prefill for a new user message, starting with what the previous reply left.
  std::vector<int32_t> render_turn(std::string_view user_text) const;
  // Feeds tokens_[n_cached_..] through the model; leaves the last row's logits in logits_.
  void prefill();
  // Samples, streams and feeds reply tokens until a stop; returns the reply's text.
  std::string decode(const GenerateParams& params, const TextSink& sink, TurnStats& stats,
                     double started_ms, bool& cancelled);

  std::shared_ptr<Engine> engine_;
  std::string id_;
  std::string system_prompt_;
  text::ChatTemplate template_;
  std::vector<Message> messages_;
  std::vector<int32_t> tokens_;  // the whole conversation; the last may still await its KV
  uint32_t n_cached_ = 0;        // tokens_[0, n_cached_) have their K/V in kv_
  bool reply_closed_ = true;     // the last reply ended with a stop token (or there is none)
  std::unique_ptr<kv::KvCache> kv_;
  std::vector<float> logits_;    // [n_vocab] of the last fed token
  std::atomic<bool> interrupt_{false};
};

}  // namespace parley::engine
