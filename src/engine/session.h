// Session: one conversation — its messages, its token ids and the KV cache that holds them.
// Used by one thread at a time (the C ABI enforces that); interrupt() may come from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/block_table.h"
#include "sample/sampler.h"
#include "text/chat_template.h"

namespace parley::engine {

class Engine;

enum class Role : int32_t { system = 0, user = 1, assistant = 2 };      // PARLEY_ROLE_*
enum class KvSource : int32_t { fresh = 0, resident = 1, restored = 2, rebuilt = 3 };

enum class OverflowPolicy : int32_t { error = 0, drop_oldest = 1 };  // PARLEY_OVERFLOW_*

struct SessionOptions {
  std::string id;                                  // "" = generate one
  std::string system_prompt;
  std::optional<text::TemplateKind> chat_template;  // nullopt = the model's
  std::string cache_scope;
  OverflowPolicy overflow = OverflowPolicy::error;
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
  uint32_t n_tokens = 0;     // tokens this message took in the conversation
  uint32_t token_begin = 0;  // where they start in the conversation's ids
  bool closed = true;        // assistant: the reply ended with its end token
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

  // A new session with this one's conversation: full KV blocks are shared, the partially
  // filled last block is copied. Throws Error: invalid_argument (bad or used id),
  // out_of_memory.
  std::unique_ptr<Session> fork(const std::string& new_id) const;

  // Drops the last n messages (the system prompt stays) and the KV behind them.
  // Throws Error(invalid_argument) when there are fewer.
  void rewind(uint32_t n_messages);

  // Adds a user message and generates the reply (turn.cpp). On Error(cancelled) the partial
  // reply is kept as the turn; on any other error the session is left as it was.
  void send(std::string_view user_text, const GenerateParams& params, const TextSink& sink,
            TurnStats& stats);

  // Makes a running send() stop at its next token. Any thread.
  void interrupt() { interrupt_.store(true, std::memory_order_relaxed); }

  const std::string& id() const { return id_; }
  const std::vector<Message>& messages() const { return messages_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  uint64_t kv_bytes_resident() const { return blocks_.bytes(); }
  // The logits the last reply token was chosen from.
  std::span<const float> last_logits() const { return logits_; }
  text::TemplateKind template_kind() const { return template_.kind(); }

 private:
  struct ForkTag {};
  Session(const Session& source, const std::string& new_id, ForkTag);

  // The ids to prefill for a new user message, starting with what the previous reply left.
  std::vector<int32_t> render_turn(std::string_view user_text) const;
  // Makes room for a new turn of `new_ids` by dropping the oldest exchanges and rebuilding
  // the conversation from its stored ids (overflow.cpp); false when even that cannot fit it.
  bool drop_oldest_to_fit(std::string_view user_text, std::vector<int32_t>& new_ids);
  // Feeds tokens_[n_cached_..] through the model, reusing published prefix blocks first;
  // leaves the last row's logits in logits_. Returns the tokens found in the prefix cache.
  uint32_t prefill();
  // Runs one token at position n_cached_ (the last of tokens_) and publishes a filled block.
  void feed_last_token();
  // Drops KV past n tokens (tokens_ is the caller's).
  void truncate_kv(uint32_t n);
  // Samples, streams and feeds reply tokens until a stop; returns the reply's text.
  std::string decode(const GenerateParams& params, const TextSink& sink, TurnStats& stats,
                     double started_ms, bool& cancelled);

  std::shared_ptr<Engine> engine_;
  std::string id_;
  std::string system_prompt_;
  std::string cache_scope_;
  OverflowPolicy overflow_;
  text::ChatTemplate template_;
  std::vector<Message> messages_;
  std::vector<int32_t> tokens_;  // the whole conversation; the last may still await its KV
  uint32_t n_cached_ = 0;        // tokens_[0, n_cached_) have their K/V in blocks_
  bool reply_closed_ = true;     // the last reply ended with a stop token (or there is none)
  kv::BlockTable blocks_;
  std::vector<float> logits_;    // [n_vocab] of the last fed token
  std::atomic<bool> interrupt_{false};
};

}  // namespace parley::engine
