// Session: one conversation — its messages, its token ids and the KV cache that holds them.
// One user at a time: callers take try_use() first (the C ABI turns a refusal into BUSY); the
// engine's spills take try_use_idle() and skip a session in use. interrupt() may come from any
// thread.
// With a store, every finished turn is committed before send() returns, and the KV can be
// spilled to the store (freeing its memory) and brought back by the next send.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "engine/step_batcher.h"
#include "kv/block_table.h"
#include "store/store.h"
#include "sample/sampler.h"
#include "text/chat_template.h"
#include "text/json_schema.h"
#include "text/schema_prefix.h"
#include "text/stop_strings.h"

namespace parley::engine {

class Engine;

enum class Role : int32_t { system = 0, user = 1, assistant = 2 };      // PARLEY_ROLE_*
enum class KvSource : int32_t { fresh = 0, resident = 1, restored = 2, rebuilt = 3 };

enum class OverflowPolicy : int32_t { error = 0, drop_oldest = 1 };  // PARLEY_OVERFLOW_*

// Error(storage): the stored conversation is no longer the one the session wrote (another
// engine on the same file changed or deleted it). A full disk has nothing to do with it.
class ChangedElsewhere : public Error {
 public:
  using Error::Error;
};

struct SessionOptions {
  std::string id;                                  // "" = generate one
  std::string system_prompt;
  std::optional<text::TemplateKind> chat_template;  // nullopt = the model's
  std::string cache_scope;
  OverflowPolicy overflow = OverflowPolicy::error;
  std::optional<int64_t> created_ms;  // when the conversation began; nullopt = now
  // The store gets the conversation only at store_built(), whole: a conversation built turn
  // by turn (an import) leaves nothing stored when a turn fails.
  bool store_when_built = false;
};

// What a reply must be (PARLEY_FORMAT_*).
enum class ReplyFormat : int32_t {
  text = 0,
  json = 1,  // one JSON object, ending where it closes
};

struct GenerateParams {
  sample::SamplerParams sampler;
  uint64_t seed = 0;          // 0 = a fresh random seed
  uint32_t max_tokens = 256;  // 0 = up to the end of the context
  bool ignore_eos = false;
  text::StopStrings stop_strings;  // the reply ends before the first of these it shows
  std::string reply_prefix;        // the reply starts with it; the model goes on from there
  ReplyFormat format = ReplyFormat::text;
  // With format json: the schema the object must satisfy (null: any object).
  std::shared_ptr<const text::JsonSchema> json_schema;
};

// Why a reply ended (PARLEY_STOP_*).
enum class StopReason : int32_t {
  none = 0,  // (not set)
  end_token = 1,
  max_tokens = 2,
  stop_string = 3,
  context_end = 4,
  cancelled = 5,
  out_of_memory = 6,
  format_end = 7,  // the reply is whole in its format
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
  StopReason stop_reason = StopReason::none;
  int32_t stop_index = -1;  // which stop string ended the reply
  bool kept = false;        // the turn is part of the conversation (also when cut short)
};

enum class SessionState : int32_t { active = 0, idle = 1, spilled = 2 };  // PARLEY_SESSION_*

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
  // A new conversation. Throws Error: invalid_argument (bad or used id, invalid UTF-8),
  // context_full (the system prompt alone does not fit), storage (the store refused it).
  Session(std::shared_ptr<Engine> engine, const SessionOptions& options);
  // A stored conversation, reopened: its KV comes back from the store on the next send.
  // Throws Error: not_found, corrupt (an unreadable transcript), storage.
  static std::unique_ptr<Session> open(std::shared_ptr<Engine> engine, const std::string& id);
  // Waits for a spill running on another thread, then spills to the store and frees the KV.
  // Until that spill is stored, an open or a delete of the id on another thread waits (from
  // begin_close() on, when that came first).
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The right to call the methods below, for a caller: empty when another caller holds it.
  // A spill the engine is running on this session is waited out (it is short), so the
  // engine's own work never makes a caller see BUSY.
  class Use {
   public:
    explicit operator bool() const { return state_.owns_lock(); }

   private:
    friend class Session;
    // Sets the session's user_thread while held (movable, as the locks are).
    class UserMark {
     public:
      UserMark() = default;
      explicit UserMark(std::atomic<std::thread::id>& user) : user_(&user) {
        user.store(std::this_thread::get_id(), std::memory_order_relaxed);
      }
      UserMark(UserMark&& other) noexcept : user_(std::exchange(other.user_, nullptr)) {}
      UserMark& operator=(UserMark&& other) noexcept {
        std::swap(user_, other.user_);  // a mark this one held is cleared with `other`
        return *this;
      }
      ~UserMark() {
        if (user_) user_->store(std::thread::id(), std::memory_order_relaxed);
      }

     private:
      std::atomic<std::thread::id>* user_ = nullptr;
    };
    std::unique_lock<std::mutex> caller_;  // released last
    std::unique_lock<std::mutex> state_;
    UserMark mark_;  // cleared first, while the session is still held
  };
  Use try_use();
  // The same right for the engine's spills: never waits; empty while anyone else has it.
  std::unique_lock<std::mutex> try_use_idle() {
    return std::unique_lock(state_mutex_, std::try_to_lock);
  }

  // Adds a user message and generates the reply (turn.cpp). On Error(cancelled), and on
  // Error(out_of_memory) when the KV budget ran out during the reply, the partial reply is
  // kept as the turn; on Error(storage) the turn is kept in memory and committed with the next
  // turn; on any other error the session is left as it was.
  void send(std::string_view user_text, const GenerateParams& params, const TextSink& sink,
            TurnStats& stats);

  // Adds a user message and a reply the caller wrote, as if the model had given it; the reply
  // is left open (the next turn closes it), or `reply_ended` ends it with the template's end
  // ids, and the KV of both is computed. Errors as send's, except that nothing is generated.
  void add_exchange(std::string_view user_text, std::string_view reply_text,
                    bool reply_ended = false);

  // Generates without a new user message: the reply to the last user message when it has none
  // (after a rewind of the reply: a new take on it), or more of the last reply when it was
  // left open (cut at max_tokens, by a stop string, stopped, or written). The new text goes
  // to `sink` and is added to that reply; a reply_prefix only starts a reply not yet under
  // way; max_tokens and stop strings apply to the new text. Throws Error(invalid_argument)
  // when there is nothing to go on from (no user message, or the last reply was ended by the
  // model); otherwise errors as send's.
  void continue_reply(const GenerateParams& params, const TextSink& sink, TurnStats& stats);

  // Does now what the next turn would otherwise start with (prepare.cpp): a spilled session's
  // KV comes back from the store; tokens without KV are computed, all but the last (the next
  // turn computes it with its message); a conversation not yet begun computes the full blocks
  // of its opening (BOS, the template's markers and the system prompt) and holds them for its
  // first turn. `stats` gets reused_tokens, computed_tokens, restore_ms and kv_source. Throws
  // Error(cancelled) when interrupted (what was computed stays), out_of_memory (the session
  // stays usable), backend.
  void prepare(TurnStats& stats);

  // How likely the model finds each reply to `user_text` after the conversation so far
  // (score_replies.cpp): the sum of log p over each reply's tokens (at temperature 1), and
  // with `with_end` over the ids that end a reply (the template's; EOS for raw) too. Nothing
  // is added to the conversation; a spilled session's KV comes back. Throws Error:
  // invalid_argument (invalid UTF-8), context_full (the message and a reply do not fit),
  // cancelled (interrupt()), out_of_memory, backend.
  struct ReplyScore {
    double logprob = 0;
    uint32_t n_tokens = 0;  // tokens scored
  };
  std::vector<ReplyScore> score_replies(std::string_view user_text,
                                        std::span<const std::string_view> replies, bool with_end) {
    return score(&user_text, replies, with_end);
  }
  // The same for what continue_reply would add, without a new message: the missing reply to
  // the last user message, or more of the open last reply (each text continuing it). Throws
  // as score_replies, and Error(invalid_argument) when there is nothing to go on from.
  std::vector<ReplyScore> score_continuations(std::span<const std::string_view> texts,
                                              bool with_end) {
    return score(nullptr, texts, with_end);
  }

  // How many ids a send of `user_text` would add before its reply (nothing changes); for a
  // text whose beginning alone outnumbers the context's tokens, a lower bound above the
  // context. Throws Error(invalid_argument) for invalid UTF-8.
  size_t count_turn_tokens(std::string_view user_text) const;
  uint32_t context_length() const;  // the engine's

  // The conversation as portable JSON (conversation_transfer.cpp): its header and every
  // message with the ids it added; no KV.
  std::string export_json() const;
  // A new session from what export_json() wrote (or a file of that shape). The ids are kept
  // when the file carries them and names this model's fingerprint, and the KV is computed by
  // the next turn or prepare(); otherwise each exchange is added from its texts, as
  // add_exchange() adds it (KV computed), as also when the ids do not fit the context under
  // DROP_OLDEST (the oldest exchanges give way). `new_id` "" keeps the file's id (generates one
  // when it has none). Throws Error: invalid_argument (a malformed file: the field is named; a
  // bad or used id), context_full, out_of_memory, storage; nothing is created then.
  static std::unique_ptr<Session> import_json(std::shared_ptr<Engine> engine,
                                              std::string_view json, const std::string& new_id);

  // A new session with this one's conversation: full KV blocks are shared, the partially
  // filled last block is copied. Throws Error: invalid_argument (bad or used id),
  // out_of_memory, storage.
  std::unique_ptr<Session> fork(const std::string& new_id) const;

  // Stores a conversation created with SessionOptions::store_when_built, in one transaction;
  // from then on its turns are committed as they come. Throws Error(storage).
  void store_built();

  // Drops the last n messages (the system prompt stays) and the KV behind them.
  // Throws Error(invalid_argument) when there are fewer, Error(storage).
  void rewind(uint32_t n_messages);

  // The conversation goes on under `system_prompt` ("" = none; system_prompt.cpp): its opening
  // is rendered again with it and the first user message, every later id is kept, and the KV
  // is computed again by the next turn. The system message is added, changed or removed
  // (turn numbers move by one when it comes or goes). When the conversation would not fit,
  // DROP_OLDEST drops its oldest exchanges (overflow.cpp). Throws Error: invalid_argument
  // (invalid UTF-8), context_full (it would not fit; nothing changes), storage (nothing
  // changes).
  void set_system_prompt(std::string_view system_prompt);

  // What the next message that does not fit does (PARLEY_OVERFLOW_*); with a store, committed
  // before this returns. Throws Error(storage); nothing changes then.
  void set_overflow(OverflowPolicy overflow);

  // Commits the messages the store lacks, then writes the KV to the store and frees its
  // memory (spill.cpp); false when there is no store or no KV to spill. Throws
  // Error(storage); the KV then stays resident.
  bool spill();

  // Makes a running send() stop at its next token. Any thread. An interrupt no call sees is
  // forgotten when the next caller takes the session (try_use).
  void interrupt() { stop_.fetch_or(kInterrupted, std::memory_order_relaxed); }
  // The same for good, as the session is closed: a call already on its way stops too, however
  // early, and so does any call after it.
  void interrupt_for_good() {
    stop_.fetch_or(kInterrupted | kClosing, std::memory_order_relaxed);
  }
  // The session is closed while a call may still run on it (on another thread, or the one
  // whose callback closes it), and is destroyed when that call lets go of it: the call stops
  // (interrupt_for_good), and the close begins now, not then, so that an open, a delete or a
  // look at the stored conversation of the id on another thread waits for it from here on
  // (Engine::begin_closing_in_use). Any thread; never throws.
  void begin_close();
  // The thread that holds the session's Use now; none while no caller does.
  std::thread::id user_thread() const { return user_thread_.load(std::memory_order_relaxed); }

  const std::string& id() const { return id_; }
  const std::vector<Message>& messages() const { return messages_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  uint64_t kv_bytes_resident() const {
    return blocks_.bytes() + (opening_ ? opening_->blocks.bytes() : 0);
  }
  bool spilled() const { return spilled_.load(std::memory_order_relaxed); }
  double last_used_ms() const { return last_used_ms_.load(std::memory_order_relaxed); }
  SessionState state(double now_ms, uint32_t idle_after_ms) const;
  SessionState state() const;
  bool has_store() const;
  uint64_t kv_bytes_stored() const;
  text::TemplateKind template_kind() const { return template_.kind(); }
  // The ids whose sampling ends a reply (the template's stop tokens), in no set order.
  const std::vector<int32_t>& end_ids() const { return template_.stop_tokens(); }
  OverflowPolicy overflow() const { return overflow_; }
  // The logits the last reply token was chosen from.
  std::span<const float> last_logits() const { return logits_; }

 private:
  struct ForkTag {};
  Session(const Session& source, const std::string& new_id, kv::BlockTable blocks, ForkTag);
  struct OpenTag {};
  Session(std::shared_ptr<Engine> engine, const store::StoredSession& stored,
          std::vector<store::StoredTurn> turns, OpenTag);
  struct ImportTag {};
  Session(std::shared_ptr<Engine> engine, const store::StoredSession& header,
          std::vector<store::StoredTurn> turns, ImportTag);
  // Takes `turns` as the conversation (a stored or imported one): unknown roles are
  // Error(bad_status), ids outside the vocabulary Error(vocabulary_status) (another model's
  // conversation is not damaged), a conversation or an opening longer than the context
  // Error(context_full). An imported one whose first ids do not begin with its system prompt's
  // is Error(invalid_argument).
  void adopt_turns(std::vector<store::StoredTurn> turns, Status bad_status,
                   Status vocabulary_status);
  // Error(context_full) when the conversation's opening (BOS, the template's markers, the
  // system prompt) and a reply's first token do not fit the context; `note` ends the message.
  void require_opening_fits(std::string_view note) const;
  // Error(invalid_argument) unless the first user message's `ids`, which do not begin with
  // the system prompt's own ids, are its text rendered with that prompt (an imported
  // conversation whose prompt was edited after its ids were).
  void require_rendered_with_system_prompt(const Message& first,
                                           std::span<const int32_t> ids) const;

  // send() and add_exchange(): a written reply when written_reply is set (ended with the
  // template's end ids when written_reply_ended), else generated.
  void run_turn(std::string_view user_text, const std::string_view* written_reply,
                bool written_reply_ended, const GenerateParams& params, const TextSink& sink,
                TurnStats& stats);
  // The first bytes of a text whose ids alone outnumber the context's tokens, found before
  // all of it is tokenized (megabytes take seconds that nothing can interrupt).
  struct HeadBeyondContext {
    size_t bytes;      // of the head
    size_t tokens;     // the head's ids
    size_t more_than;  // the whole text has more ids than this, itself more than the context
  };
  std::optional<HeadBeyondContext> head_beyond_context(std::string_view text) const;
  // Refuses (context_full), before tokenizing all of it, a text that alone is longer than the
  // context (its UTF-8 already checked); `what` names it: "message", "reply".
  void refuse_text_beyond_context(std::string_view text, std::string_view what) const;
  // The conversation as it stood before a change that renumbers it (a DROP_OLDEST rebuild, a
  // new system prompt), to put back when what follows fails. Its KV is not part of it: a
  // rebuild drops all KV, and the conversation put back computes it again.
  struct ConversationCopy {
    std::vector<Message> messages;
    std::vector<int32_t> tokens;
    bool reply_closed;
    bool rewrite_transcript;
  };
  ConversationCopy copy_conversation() const {
    return {messages_, tokens_, reply_closed_, rewrite_transcript_};
  }
  // Back to `c` after a failure (the KV the session holds must be that of c's first ids).
  void put_back(ConversationCopy&& c);
  // Checks that `new_ids` and `reply_room` more tokens fit, brings spilled KV back, and makes
  // room under DROP_OLDEST: there for `wanted_room` tokens of reply (max_tokens) when dropping
  // older exchanges can give that, else for `reply_room`. `user_text` is the new user
  // message, or null when the last reply goes on (its user message then stays). `written`
  // says the reply room is exact. Throws Error(context_full) when it cannot fit; changes
  // nothing before that. Returns the conversation as it was when older exchanges were
  // dropped: a turn that then fails before it is kept (the KV budget running out in the
  // prompt) puts them back.
  std::optional<ConversationCopy> fit_turn(const std::string_view* user_text,
                                           std::vector<int32_t>& new_ids, size_t reply_room,
                                           size_t wanted_room, bool written, TurnStats& stats);
  // How many ids at the start of `opening` (a conversation's first turn) are the system
  // prompt's own, as render_system gives them; 0 when the template does not render it so.
  uint32_t system_prefix_tokens(std::span<const int32_t> opening,
                                std::string_view system_prompt) const;
  // score_replies() after `user_text`; score_continuations() when it is null.
  std::vector<ReplyScore> score(const std::string_view* user_text,
                                std::span<const std::string_view> replies, bool with_end);
  // What continuing goes on from: a missing reply (the last message is the user's) or an open
  // one. Throws Error(invalid_argument) when there is neither; returns whether new text
  // starts the reply (it has no ids yet: no text, or whitespace its template strips).
  bool continuation_starts_reply() const;
  // Ids of text put at the end of the reply continuing goes on from: a reply's start
  // (render_reply; `after_id` is the id it follows), or more of a reply under way
  // (ChatTemplate::render_more_of_reply); `whole` when the text ends the reply.
  std::vector<int32_t> render_continuation(std::string_view text, bool reply_start,
                                           int32_t after_id, bool whole = false) const;
  // The ids a message took in the conversation.
  std::span<const int32_t> message_ids(const Message& m) const;
  // The ids of the last reply when it is the last message; none after a user message (whose
  // missing reply the next turn closes as an empty one).
  std::span<const int32_t> open_reply_ids() const;
  // The ids to prefill for a new user message, starting with what the previous reply left.
  std::vector<int32_t> render_turn(std::string_view user_text) const;
  // Makes room for a new turn of `new_ids` and `reply_room` reply tokens by dropping the
  // oldest exchanges and rebuilding the conversation from its stored ids (overflow.cpp).
  // Returns the conversation as it was before; nullopt, changing nothing, when even that
  // cannot fit it. `user_text` null: no new message, and the last user message is never
  // dropped.
  std::optional<ConversationCopy> drop_oldest_to_fit(const std::string_view* user_text,
                                                     std::vector<int32_t>& new_ids,
                                                     size_t reply_room);
  // Brings spilled KV back from the store (resume.cpp); returns whether all of it came back.
  bool restore_kv();
  // The stored blobs of full blocks [first, end) while they belong to this conversation's
  // tokens; false when one did not (those before it are in `blobs`).
  bool read_block_blobs(store::Store& store, const store::StoredKv& kv, size_t first, size_t end,
                        std::vector<std::vector<std::byte>>& blobs);
  // Decodes blobs of the full blocks from n_cached_ on into the cache and advances n_cached_
  // up to the first that is bad (false then; a recomputable error is logged). Blobs that fail
  // their checks go to damaged_blocks_.
  bool decode_block_blobs(const store::StoredKv& kv,
                          const std::vector<std::vector<std::byte>>& blobs);
  // Whether the stored tail block goes on from n_cached_ and was computed for this
  // conversation's tokens there (its chained hash), with a token left for prefill.
  bool tail_restorable(const store::StoredKv& kv) const;
  // Feeds tokens_[n_cached_, end) through the model, reusing published prefix blocks first;
  // leaves the last row's logits in logits_. Returns the tokens found in the prefix cache.
  // Stops between chunks when interrupted (n_cached_ then short of end, logits_ stale).
  uint32_t prefill(uint32_t end);
  uint32_t prefill() { return prefill(uint32_t(tokens_.size())); }
  // Computes tokens[from, end) into `table` in chunks, the last row's logits into `logits`;
  // returns how far it got (end, or less when interrupted). Does not publish.
  uint32_t compute(kv::BlockTable& table, std::span<const int32_t> tokens, uint32_t from,
                   uint32_t end, std::vector<float>& logits);
  // prepare() for a conversation not yet begun: its opening's full blocks into opening_.
  void prepare_opening(TurnStats& stats);
  // Where a call finds the KV it starts from, as long as none is in the store only: held in
  // memory (the conversation's, or a prepared opening), or none yet.
  KvSource kv_held() const {
    return n_cached_ > 0 || opening_ ? KvSource::resident : KvSource::fresh;
  }
  // Runs one token at position n_cached_ (the last of tokens_), as one of the decode steps
  // that `decoder` shares with other sessions, and publishes a filled block.
  void feed_last_token(StepBatcher::Decoder& decoder);
  // Makes positions [from, to) writable, spilling other sessions when the budget is short.
  void prepare_write(uint32_t from, uint32_t to) { prepare_write(blocks_, from, to); }
  void prepare_write(kv::BlockTable& table, uint32_t from, uint32_t to);
  // table.fork(n_filled), whose one allocation (the copy of a partly filled last block)
  // makes room as a write does.
  kv::BlockTable fork_blocks(const kv::BlockTable& table, uint32_t n_filled) const;
  // Runs `write`, a KV write into `table` that throws the pool's Error(out_of_memory) when the
  // budget is short; then spills idle sessions and runs it again while there is room to make
  // (Engine::write_with_room: `needed` says how many more blocks it takes, and the table's
  // blocks are held, which no spill frees). Throws the pool's error when no room comes, or
  // make_room's when a spill failed. A template (kv_room.cpp, its only user): a decode step
  // writes through it every token, and the first try needs no std::function.
  template <class Write, class Needed>
  void write_kv_with_room(const Write& write, const Needed& needed,
                          const kv::BlockTable& table) const;
  // How a reply ended, when not by a stop token, a stop string or a limit.
  enum class ReplyCut { none, cancelled, out_of_kv_memory };
  // Samples, streams and feeds reply tokens until a stop; returns the new text (the prefix,
  // then what was generated) of a reply that had the `earlier` text so far, whose last
  // `unfinished_ids` ids are the first bytes of a character `earlier` does not hold (see
  // unfinished_character_ids). Without ids yet (`reply_has_ids` false: no text and no
  // prefix, or whitespace the template stripped), the first token starts the reply. A reply
  // that shows a stop string ends before it: the text from there on is not streamed, and the
  // tokens that brought only that text are dropped (with their KV); one whose text the stop
  // string begins inside is respelled (respell_split_token). A sink that asks to stop
  // likewise ends the reply at the text it was given: text held back as a possible stop
  // string's start is not the reply's.
  std::string decode(sample::Sampler& sampler, const GenerateParams& params,
                     std::string_view earlier, size_t unfinished_ids, bool reply_has_ids,
                     const TextSink& sink, TurnStats& stats, double started_ms, ReplyCut& cut);
  // How many of the conversation's last ids are byte pieces that begin a character and do
  // not finish it (a reply cut inside a character: its text ends with one U+FFFD for them).
  size_t unfinished_character_ids() const;
  // The sampler's seed: the caller's, or a fresh random one for 0.
  static uint64_t seed_for(const GenerateParams& params);
  // With format json: the JSON state after the reply's text so far (`earlier`, then the
  // prefix); throws Error(invalid_argument) when that text cannot grow into one JSON object
  // (that the schema accepts). nullopt with format text. The state refers to the schema.
  static std::optional<text::SchemaPrefix> json_start(const GenerateParams& params,
                                                    std::string_view earlier);
  // The error a kept turn still reports when its reply was cut short.
  void fail_if_cut(ReplyCut cut, const TurnStats& stats);
  // Drops KV past n tokens (tokens_ is the caller's).
  void truncate_kv(uint32_t n);
  // Where a turn starts from, so that one that fails leaves the conversation as it was.
  struct Checkpoint {
    size_t n_tokens;
    uint32_t n_cached;
    bool reply_closed;
  };
  Checkpoint checkpoint() const { return {tokens_.size(), n_cached_, reply_closed_}; }
  // Tokens, their KV and the last reply's state back to `c` (messages_ are the caller's).
  void roll_back(const Checkpoint& c) {
    tokens_.resize(c.n_tokens);
    truncate_kv(c.n_cached);
    reply_closed_ = c.reply_closed;
  }
  // Drops the last n reply tokens and their KV; the one then last awaits its KV again.
  void drop_reply_tokens(size_t n);
  // The reply ends inside the last token's text (`shown`, of which `kept_bytes` come
  // before it): the token brought text the reply does not keep, so it gives way to the ids of
  // the part kept, and the model goes on from what the reply says. Left as it is when its text
  // is not its piece (a byte of an unfinished character) or the ids would not fit the context.
  void respell_split_token(std::string_view shown, size_t kept_bytes);
  // Drops the last token's KV if it was computed, as a generated reply leaves it: the next
  // turn then computes it and the logits that follow it.
  void await_last_token_kv();
  // Stores the conversation, new to the store, with its turns so far: one transaction, so
  // that a failure leaves no half-made conversation behind.
  void create_in_store(store::Store& store);
  // Commits the messages the store does not have yet (transcript.cpp).
  void commit_messages();
  // Runs a write of this session's stored rows. The store refusing it for anything but a
  // store failure (Error(storage), Error(out_of_memory)) means the stored conversation is no
  // longer the one this session wrote: another engine on the same file changed or deleted
  // it. That becomes Error(storage) saying so; nothing was written.
  template <class Write>
  void write_own_rows(Write&& write) {
    try {
      std::forward<Write>(write)();
    } catch (const Error& e) {
      if (e.status() == Status::storage || e.status() == Status::out_of_memory) throw;
      fail_changed_elsewhere(e.what());
    }
  }
  [[noreturn]] void fail_changed_elsewhere(const std::string& detail) const;
  // The destructor's spill: what the store refuses is logged, as closing never fails.
  void spill_on_close() noexcept;
  store::StoredSession stored_header() const;
  std::vector<store::StoredTurn> stored_turns(size_t first) const;

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
  // The opening's blocks, computed by prepare() before the first turn and published: held
  // until that turn takes them from the prefix cache (or a spill lets them go).
  struct Opening {
    kv::BlockTable blocks;
    uint32_t n_tokens;
  };
  std::optional<Opening> opening_;
  std::vector<float> logits_;    // [n_vocab] of the last fed token
  // Hashes of stored prefix blocks whose blobs failed their checks at restore: the next spill
  // writes the recomputed blobs in their place, so that one damaged block costs one rebuild.
  std::vector<uint64_t> damaged_blocks_;
  size_t n_committed_ = 0;       // messages_[0, n_committed_) are in the store
  size_t n_stored_ = 0;          // turns the store holds (more when a reply went on since)
  int64_t revision_ = 0;         // the stored transcript's revision as this session left it
  int64_t created_revision_ = 0;     // the stored conversation's first revision (set_overflow)
  bool rewrite_transcript_ = false;  // the stored turns must be replaced, not appended to
  bool unstored_ = false;            // built before the store gets it (store_when_built)
  // Read by the engine's bookkeeping without taking the session.
  std::atomic<bool> spilled_{false};  // the KV is in the store, not in blocks_
  std::atomic<double> last_used_ms_{0};
  int64_t created_ms_ = 0;
  static constexpr uint8_t kInterrupted = 1, kClosing = 2;
  std::atomic<uint8_t> stop_{0};  // kInterrupted, kClosing
  bool interrupted() const { return stop_.load(std::memory_order_relaxed) != 0; }
  std::atomic<std::thread::id> user_thread_{};  // user_thread()
  std::mutex caller_mutex_;  // one caller at a time (try_use)
  std::mutex state_mutex_;   // whoever reads or changes the state: a caller, or a spill
};

}  // namespace parley::engine
