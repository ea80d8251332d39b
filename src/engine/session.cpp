#include "engine/session.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "common/shown_id.h"
#include "common/utf8_sequence.h"
#include "engine/clock.h"
#include "engine/engine.h"
#include "text/python_strip.h"
#include "text/utf8_stream.h"

namespace parley::engine {
namespace {

constexpr size_t kMaxSessionIdBytes = 127;

// Ids travel through the store listing ('\n'-separated) and file names: printable UTF-8 only.
void check_session_id(const std::string& id) {
  require(id.size() <= kMaxSessionIdBytes, Status::invalid_argument,
          "session id is " + std::to_string(id.size()) + " bytes; the limit is 127");
  require(text::is_valid_utf8(id), Status::invalid_argument, "session id is not valid UTF-8");
  for (std::string_view rest = id; !rest.empty();) {
    const size_t length = next_utf8_sequence(rest).length;
    require(!is_control_character(rest.substr(0, length)), Status::invalid_argument,
            "session id contains a control character");
    rest.remove_prefix(length);
  }
}

text::TemplateKind stored_template(const std::string& name) {
  const auto kind = text::template_from_name(name);
  require(kind.has_value(), Status::corrupt, "stored chat template '" + name + "' is unknown");
  return *kind;
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
  require(text::is_valid_utf8(cache_scope_), Status::invalid_argument,
          "cache_scope is not valid UTF-8");
  require_opening_fits("");
  if (!system_prompt_.empty()) messages_.push_back({Role::system, system_prompt_, 0, 0, true});
  created_ms_ = options.created_ms.value_or(unix_ms());
  last_used_ms_ = now_ms();
  // Registered, the session is visible to the engine's spills: none may touch it half-built.
  std::lock_guard constructing(state_mutex_);
  id_ = engine_->register_session(this, options.id, false);
  unstored_ = options.store_when_built && engine_->store();
  if (auto* store = engine_->store(); store && !unstored_) {
    try {
      create_in_store(*store);
    } catch (...) {
      engine_->unregister_session(id_);
      throw;
    }
  }
}

Session::Session(const Session& source, const std::string& new_id, kv::BlockTable blocks,
                 ForkTag)
    : engine_(source.engine_),
      system_prompt_(source.system_prompt_),
      cache_scope_(source.cache_scope_),
      overflow_(source.overflow_),
      template_(source.template_),
      messages_(source.messages_),
      tokens_(source.tokens_),
      n_cached_(source.n_cached_),
      reply_closed_(source.reply_closed_),
      blocks_(std::move(blocks)),
      logits_(source.logits_),
      damaged_blocks_(source.damaged_blocks_) {  // its spill too rewrites them
  spilled_ = source.spilled();
  created_ms_ = unix_ms();
  last_used_ms_ = now_ms();
  std::lock_guard constructing(state_mutex_);  // as above
  id_ = engine_->register_session(this, new_id, false);
  if (auto* store = engine_->store()) {
    try {
      create_in_store(*store);
    } catch (...) {
      engine_->unregister_session(id_);
      throw;
    }
    // A spilled source's KV is the fork's too; the store shares its prefix blocks. Without
    // the copy the fork recomputes it when used: its turns are stored, nothing is lost.
    if (spilled_) {
      try {
        if (auto kv = store->load_kv(source.id_)) {
          store->save_kv(id_, *kv, {}, uint32_t(n_stored_), revision_);
        }
      } catch (const std::exception& e) {
        log::warn_line("fork " + shown_id(id_) + " recomputes its KV when used: " + e.what());
      }
    }
  }
}

Session::Session(std::shared_ptr<Engine> engine, const store::StoredSession& stored,
                 std::vector<store::StoredTurn> turns, OpenTag)
    : engine_(std::move(engine)),
      system_prompt_(stored.system_prompt),
      cache_scope_(stored.cache_scope),
      overflow_(OverflowPolicy(stored.overflow)),
      template_(stored_template(stored.chat_template), engine_->tokenizer()),
      blocks_(engine_->kv_pool(), engine_->prefix_root(stored.cache_scope)) {
  adopt_turns(std::move(turns), Status::corrupt,
              stored.model_fingerprint == engine_->model().fingerprint ? Status::corrupt
                                                                       : Status::model_mismatch);
  n_committed_ = n_stored_ = messages_.size();
  revision_ = stored.revision;
  created_revision_ = stored.created_revision;
  created_ms_ = stored.created_ms;
  spilled_ = !tokens_.empty();  // its KV, if any, is in the store
  last_used_ms_ = now_ms();
  id_ = engine_->register_session(this, stored.id, true);
}

Session::Session(std::shared_ptr<Engine> engine, const store::StoredSession& header,
                 std::vector<store::StoredTurn> turns, ImportTag)
    : engine_(std::move(engine)),
      system_prompt_(header.system_prompt),
      cache_scope_(header.cache_scope),
      overflow_(OverflowPolicy(header.overflow)),
      template_(stored_template(header.chat_template), engine_->tokenizer()),
      blocks_(engine_->kv_pool(), engine_->prefix_root(header.cache_scope)) {
  check_session_id(header.id);
  adopt_turns(std::move(turns), Status::invalid_argument, Status::invalid_argument);
  created_ms_ = header.created_ms;
  last_used_ms_ = now_ms();
  std::lock_guard constructing(state_mutex_);  // as in the first constructor
  id_ = engine_->register_session(this, header.id, false);
  if (auto* store = engine_->store()) {
    try {
      create_in_store(*store);
    } catch (...) {
      engine_->unregister_session(id_);
      throw;
    }
    spilled_ = !tokens_.empty();  // as a reopened session without stored KV: rebuilt
  }
}

void Session::create_in_store(store::Store& store) {
  const store::Store::Created created = store.create_session(stored_header(), stored_turns(0));
  created_revision_ = created.created_revision;
  revision_ = created.revision;
  n_committed_ = n_stored_ = messages_.size();
}

void Session::store_built() {
  auto* store = engine_->store();
  if (!store || !unstored_) return;
  create_in_store(*store);
  unstored_ = false;
  rewrite_transcript_ = false;  // (a rebuild under DROP_OLDEST: what is stored is its result)
}

void Session::require_opening_fits(std::string_view note) const {
  const size_t start_tokens = template_.render_user_turn(system_prompt_, "", true).size();
  if (start_tokens + 1 <= engine_->context_length()) return;
  fail(Status::context_full,
       "a conversation's opening (" +
           std::string(system_prompt_.empty() ? "BOS and the template's markers"
                                              : "BOS, the template's markers and the system "
                                                "prompt") +
           ") takes " + std::to_string(start_tokens) + " tokens, and a reply at least 1 more: " +
           "the context holds " + std::to_string(engine_->context_length()) + std::string(note));
}

void Session::require_rendered_with_system_prompt(const Message& first,
                                                  std::span<const int32_t> ids) const {
  // Where the template's rendering merges the prompt's last ids with the message's, the whole
  // first turn tells (as the session that exported it rendered it). A text far longer than
  // the ids cannot be theirs: it is not tokenized whole to find that out.
  const bool rendered_so =
      !head_beyond_context(first.text) &&
      std::ranges::equal(template_.render_user_turn(system_prompt_, first.text, true), ids);
  require(rendered_so, Status::invalid_argument,
          "imported conversation: its system prompt is not the one the messages' tokens begin "
          "with (they were rendered with another); leave out the messages' \"tokens\" to have "
          "the conversation tokenized anew with this prompt");
}

void Session::adopt_turns(std::vector<store::StoredTurn> turns, Status bad_status,
                          Status vocabulary_status) {
  const bool stored = bad_status == Status::corrupt;
  const std::string whose = stored ? "stored" : "imported";
  for (auto& t : turns) {
    require(t.role >= 0 && t.role <= 2, bad_status, whose + " turn has an unknown role");
    for (int32_t id : t.token_ids) {
      require(id >= 0 && id < engine_->config().n_vocab, vocabulary_status,
              whose + " token " + std::to_string(id) + " is outside this model's vocabulary" +
                  (vocabulary_status == Status::model_mismatch
                       ? " (the conversation was started with another model)"
                       : ""));
    }
    // Text comes from ids, and a conversation opens with at least BOS: a message that says
    // something, or opens the conversation, without them would leave text and ids apart.
    // (A llama2 reply of whitespace alone has none: its template strips it.)
    const bool opens = tokens_.empty() && t.role != int32_t(Role::system);
    const bool stripped_reply = t.role == int32_t(Role::assistant) &&
                                template_.kind() == text::TemplateKind::llama2;
    const bool says_nothing =
        t.text.empty() || (stripped_reply && text::strip_python_space(t.text, true, true).empty());
    require(t.role == int32_t(Role::system) || !t.token_ids.empty() || (says_nothing && !opens),
            bad_status, [&] {
              return whose + " message " + std::to_string(messages_.size()) + " has no token ids" +
                     (opens ? ", yet it opens the conversation (with BOS at least)"
                            : ", yet it has text");
            });
    // A user message right after another (a hand-made file) has its missing reply recorded
    // as an empty one, as a live session and an import of texts record it: the same file
    // gives the same turns, with ids or without.
    if (t.role == int32_t(Role::user) && !messages_.empty() &&
        messages_.back().role == Role::user && !stored) {
      messages_.push_back({Role::assistant, std::string(), 0, uint32_t(tokens_.size()), false});
    }
    Message m{Role(t.role), std::move(t.text), uint32_t(t.token_ids.size()),
              uint32_t(tokens_.size()), t.closed};
    tokens_.insert(tokens_.end(), t.token_ids.begin(), t.token_ids.end());
    // After a user message (the conversation was rewound to one) the reply is missing: the
    // next turn closes it as an empty one, as rewind() leaves the live session.
    if (m.role != Role::system) reply_closed_ = m.role == Role::assistant && m.closed;
    messages_.push_back(std::move(m));
  }
  // A conversation from an engine with a longer context is whole, not corrupt: it is left
  // as it is, for an engine whose context holds it. So is one whose opening alone is longer
  // (a system prompt and no message yet: no ids to count).
  const std::string unchanged = stored ? " (an engine with a context_length that holds it "
                                         "opens it; nothing was changed)"
                                       : "";
  require(tokens_.size() <= engine_->context_length(), Status::context_full, [&] {
    return whose + " conversation has " + std::to_string(tokens_.size()) +
           " tokens; this engine's context holds " +
           std::to_string(engine_->context_length()) + unchanged;
  });
  require_opening_fits(unchanged);
  // The system prompt's own ids are stored with the first user message, which opens the
  // conversation with them: each message's count is its own again, as in the live session.
  // A stored conversation's ids are the model's to read as they are (another model's may not
  // begin with the prompt's ids at all); an imported one's may have been edited.
  if (messages_.size() > 1 && messages_[0].role == Role::system) {
    Message& first = messages_[1];
    const auto ids = message_ids(first);
    const uint32_t system_tokens = system_prefix_tokens(ids, system_prompt_);
    if (!stored && system_tokens == 0) require_rendered_with_system_prompt(first, ids);
    messages_[0].n_tokens = system_tokens;
    first.n_tokens -= system_tokens;
  }
}

std::unique_ptr<Session> Session::open(std::shared_ptr<Engine> engine, const std::string& id) {
  auto* store = engine->store();
  require(
      store != nullptr, Status::not_found,
      "no session store is open (set store_path), so there is no stored session " + shown_id(id));
  // After a close of this id on another thread has stored what it spills.
  const auto no_delete_meanwhile = engine->hold_stored_id(id);
  // Open now, it is refused before its stored state is read: a close of it that began and
  // ended before the registration below would otherwise leave this a stale copy of it.
  engine->require_not_open(id);
  // One snapshot: the revision this session starts from is that of the turns it reads.
  auto stored = store->load_conversation(id);
  require(stored.has_value(), Status::not_found, "no stored session " + shown_id(id));
  return std::unique_ptr<Session>(
      new Session(std::move(engine), stored->session, std::move(stored->turns), OpenTag{}));
}

void Session::begin_close() {
  interrupt_for_good();
  engine_->begin_closing_in_use(this);
}

Session::~Session() {
  // No spill of the engine's picks the session from here on, yet its id stays taken until the
  // spill below is stored: an open or a delete of it waits, rather than read the store first.
  // (After begin_close() this takes over its entry: the close now runs on this thread.)
  engine_->begin_closing(this);
  {
    std::lock_guard wait_for_spill(state_mutex_);
    if (engine_->store()) spill_on_close();
  }
  engine_->end_closing(this);
}

void Session::spill_on_close() noexcept {
  // The transcript is committed (also when the KV is already stored); keeping the KV too
  // makes reopening instant.
  try {
    spill();
  } catch (const std::exception& e) {  // storage, or memory ran out: closing never fails
    try {
      log::warn_line("closing session " + shown_id(id_) + ": " + e.what());
    } catch (...) {  // not even the message fits in memory
    }
  }
}

Session::Use Session::try_use() {
  Use use;
  use.caller_ = std::unique_lock(caller_mutex_, std::try_to_lock);
  if (!use.caller_) return use;
  use.state_ = std::unique_lock(state_mutex_);
  use.mark_ = Use::UserMark(user_thread_);
  // An interrupt is for the call under way: one asked while none was is forgotten. A close's
  // is not: it holds for whatever call was still on its way.
  stop_.fetch_and(uint8_t(~kInterrupted), std::memory_order_relaxed);
  return use;
}

std::unique_ptr<Session> Session::fork(const std::string& new_id) const {
  // Before the fork takes a KV block (the copy of its last one): a bad id or one in use is the
  // error to report, not a budget that has no block left.
  check_session_id(new_id);
  if (!new_id.empty()) engine_->require_free_session_id(new_id);
  // The copy of a partly filled last block is the fork's one allocation: idle sessions make
  // room for it as they do for a send.
  return std::unique_ptr<Session>(
      new Session(*this, new_id, fork_blocks(blocks_, n_cached_), ForkTag{}));
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
  auto* store = engine_->store();
  if (store && rewrite_transcript_ && !unstored_) {
    // The store still holds the conversation from before a rebuild (DROP_OLDEST) whose commit
    // failed, numbered otherwise: the rewound conversation replaces it whole, as the next
    // commit would have. First: a failure changes nothing.
    auto turns = stored_turns(0);
    turns.resize(first_dropped);
    write_own_rows(
        [&] { revision_ = store->replace_turns(id_, uint32_t(n_stored_), turns, revision_); });
    rewrite_transcript_ = false;
    n_committed_ = n_stored_ = first_dropped;
  } else if (store && n_stored_ > first_dropped) {
    // First: a failure changes nothing. The stored KV keeps the blocks before the kept ids'
    // last one (which the next turn recomputes anyway for its logits).
    write_own_rows([&] {
      revision_ = store->truncate_turns(id_, uint32_t(n_stored_), uint32_t(first_dropped),
                                        keep ? keep - 1 : 0, revision_);
    });
    n_stored_ = first_dropped;
    n_committed_ = std::min(n_committed_, first_dropped);
  }
  const Message* last_kept = first_dropped > n_system ? &messages_[first_dropped - 1] : nullptr;
  // After a user message the reply is missing: the next turn closes it as an empty one.
  reply_closed_ = !last_kept || (last_kept->role == Role::assistant && last_kept->closed);
  messages_.resize(first_dropped);
  tokens_.resize(keep);
  truncate_kv(keep);
  if (tokens_.empty()) {
    spilled_ = false;  // no KV left to bring back from the store
    // The system prompt's ids went with the first user message: the next turn renders them.
    if (n_system) messages_.front().n_tokens = 0;
  }
}

void Session::truncate_kv(uint32_t n) {
  n_cached_ = std::min(n_cached_, n);
  blocks_.truncate(n_cached_);
}

void Session::put_back(ConversationCopy&& c) {
  messages_ = std::move(c.messages);
  tokens_ = std::move(c.tokens);
  reply_closed_ = c.reply_closed;
  rewrite_transcript_ = c.rewrite_transcript;
}

SessionState Session::state(double now, uint32_t idle_after_ms) const {
  if (spilled()) return SessionState::spilled;
  if (idle_after_ms > 0 && now - last_used_ms() >= idle_after_ms) return SessionState::idle;
  return SessionState::active;
}

SessionState Session::state() const { return state(now_ms(), engine_->idle_spill_ms()); }

bool Session::has_store() const { return engine_->store() != nullptr; }

uint64_t Session::kv_bytes_stored() const {
  auto* store = engine_->store();
  return store ? store->kv_bytes(id_) : 0;
}

size_t Session::count_turn_tokens(std::string_view user_text) const {
  require(text::is_valid_utf8(user_text), Status::invalid_argument,
          "user text is not valid UTF-8");
  // A text that cannot fit is not measured to its end: its answer is "does not fit" anyway.
  if (const auto head = head_beyond_context(user_text)) return head->more_than + 1;
  return render_turn(user_text).size();
}

uint32_t Session::context_length() const { return engine_->context_length(); }

std::span<const int32_t> Session::message_ids(const Message& m) const {
  return std::span<const int32_t>(tokens_).subspan(m.token_begin, m.n_tokens);
}

std::span<const int32_t> Session::open_reply_ids() const {
  if (messages_.empty() || messages_.back().role != Role::assistant) return {};
  return message_ids(messages_.back());
}

std::vector<int32_t> Session::render_turn(std::string_view user_text) const {
  std::vector<int32_t> ids;
  if (!reply_closed_) ids = template_.close_reply(open_reply_ids());
  const bool first = tokens_.empty();
  const auto turn = template_.render_user_turn(system_prompt_, user_text, first);
  ids.insert(ids.end(), turn.begin(), turn.end());
  return ids;
}

}  // namespace parley::engine
