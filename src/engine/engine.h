// Engine: owns the loaded model, its tokenizer and backend, the KV block pool, the optional
// session store, and the bookkeeping that spans sessions (live sessions by id, spilling them
// when idle or when the KV budget runs short). Thread-safe; sessions hold it by shared_ptr,
// so it lives until the last of them closes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "engine/json_vocabulary.h"
#include "engine/step_batcher.h"
#include "kv/block_pool.h"
#include "model/model_loader.h"
#include "store/store.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace parley::engine {

struct EngineOptions {
  std::string model_path;
  std::string device = "auto";
  int32_t n_threads = 0;            // 0 = one per core
  kv::KvType kv_type = kv::KvType::int8;
  uint64_t kv_budget_bytes = 0;     // 0 = automatic
  uint32_t context_length = 0;      // 0 = the model's
  std::string store_path;           // "" = sessions live in memory only
  store::StoreOptions store_options;
  uint32_t idle_spill_ms = 0;       // spill sessions idle this long; 0 = only under pressure
  bool batch_decode = true;         // sessions generating at once share decode steps
  LoadProgress* load_progress = nullptr;  // reports the model's loading; not owned
};

struct EngineStats {
  uint32_t sessions_active = 0;
  uint32_t sessions_idle = 0;
  uint32_t sessions_spilled = 0;
  kv::PoolStats blocks;
  uint64_t kv_bytes_per_token = 0;
  uint64_t kv_bytes_resident = 0;  // blocks referenced by sessions, plus cached prefix blocks
  uint64_t kv_budget_bytes = 0;
  uint64_t store_bytes = 0;
  StepStats decode;
};

class Session;
class Janitor;

class Engine {
 public:
  // Throws Error: see parley_engine_open.
  explicit Engine(const EngineOptions& options);
  // An engine over a model already in memory (options.model_path is not used).
  Engine(std::unique_ptr<model::LoadedModel> model, const EngineOptions& options);
  ~Engine();

  const model::LoadedModel& model() const { return *model_; }
  const model::ModelConfig& config() const { return model_->config; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }
  // For replies that must be JSON: made on first use (a pass over the vocabulary), then
  // shared by every session. Safe from any thread.
  const JsonVocabulary& json_vocabulary() const;
  backend::Backend& backend() { return *backend_; }
  // Runs the decode steps of sessions that generate at the same time together.
  StepBatcher& step_batcher() { return *step_batcher_; }
  kv::KvType kv_type() const { return pool_->layout().type(); }
  kv::KvShape kv_shape() const { return pool_->layout().shape(); }
  kv::BlockPool& kv_pool() { return *pool_; }
  // Where a session's chain of prefix blocks starts: the model, the KV format and the scope.
  uint64_t prefix_root(std::string_view cache_scope) const;
  uint32_t context_length() const { return context_length_; }
  // Threads for work outside the backend (decoding restored KV): n_threads, or one per core.
  uint32_t worker_threads() const { return worker_threads_; }
  text::TemplateKind default_template() const { return default_template_; }

  store::Store* store() { return store_.get(); }
  uint32_t idle_spill_ms() const { return idle_spill_ms_; }

  // Live sessions. Ids are unique among them and, with a store, among the stored ones
  // (a new session may not take a stored conversation's id). "" = generate one.
  std::string register_session(Session* session, const std::string& requested, bool reopening);
  void unregister_session(const std::string& id);
  // A session being destroyed leaves the live ones first, so that no spill of the engine picks
  // it any more, but its id stays taken ("closing") until its last spill is stored: an open, a
  // delete or a look at the stored conversation waits for that (wait_until_closed), and so
  // reads what the close stored, never a conversation about to change under it. Neither
  // throws: room was kept at registration, and a session is in the closing ones once.
  void begin_closing(const Session* session);
  // The same, begun before the destructor: the session was closed while a call may still run
  // on it, and is destroyed when that call returns. Until then the thread of whoever uses it
  // (Session::user_thread) does not wait for its close; its destructor's begin_closing takes
  // the entry over.
  void begin_closing_in_use(const Session* session);
  void end_closing(const Session* session);
  // Waits while a session with this id is closing on another thread. The closing thread itself
  // does not wait for its own close (a log handler called from its spill, the callback of the
  // call it still runs), so it never hangs.
  void wait_until_closed(const std::string& id);
  // How many calls wait in wait_until_closed now (tests wait for a call to get there).
  size_t calls_waiting_for_close() const;
  // Refuses (invalid_argument) an id an open session has.
  void require_not_open(const std::string& id);
  // Refuses (invalid_argument) an id an open or a stored session has.
  void require_free_session_id(const std::string& id);

  // Spills the least recently used sessions nobody is using (never `except`) until `n_blocks`
  // more can be allocated; false when that is not possible (no store, or too little to spill).
  // Sessions in use elsewhere (being spilled by the janitor, or in a call) may free their
  // blocks a moment later: it retries for up to half a second before giving up, but only
  // while such sessions are left, once a spill has failed. A session whose spill failed is
  // not tried again in the same call. Throws Error(out_of_memory) naming the sessions whose
  // spills failed and the store's reason, when no room was made and a spill failed.
  bool make_room(size_t n_blocks, const Session* except);
  // A session's write of KV that the pool could not hold: `write` makes positions writable
  // (false when the pool ran out), `needed` says how many blocks it takes now, and `held` how
  // many the writer holds, which no spill frees.
  struct KvWrite {
    std::function<bool()> write;
    std::function<size_t()> needed;
    size_t held = 0;
  };
  // Makes room as make_room does and writes, again while there is room to make, so that
  // blocks freed for this write and taken by another session's are made up for. One writer
  // makes room at a time. False when the write cannot fit: more blocks than the budget holds
  // besides the writer's own (at once), or no room made (no store, or none within half a
  // second, while sessions the janitor spills free their blocks). Throws as make_room does
  // when a spill failed.
  bool write_with_room(const Session* writer, const KvWrite& kv_write);
  // Spills every session idle since before `idle_since_ms` (the janitor's pass); returns how
  // many spills failed (each logged).
  size_t spill_idle(double idle_since_ms);
  // Spills every live session nobody is using (the engine is being closed).
  void spill_all();

  // Deletes a stored conversation. Throws Error: not_found (no store, or no such session),
  // invalid_argument (it is open in this engine), storage.
  void delete_stored_session(const std::string& id);
  // Held by an open from reading the stored conversation to registering the session, and by
  // a delete from checking that it is not open to deleting it: of an open and a delete of one
  // conversation on two threads, one wins, and no session is left open on a deleted one.
  std::unique_lock<std::mutex> hold_stored_ids() { return std::unique_lock(stored_ids_mutex_); }
  // hold_stored_ids, once no session with this id is closing: what an open or a delete of
  // the id holds. The wait comes before the lock, so a close never waits for the lock's holder.
  std::unique_lock<std::mutex> hold_stored_id(const std::string& id);

  // A stored conversation as the store has it, and whether it is open here. Throws Error:
  // not_found (no store, or no such session), storage.
  struct StoredSessionInfo {
    store::StoredSummary summary;
    bool open = false;
    // Its stored KV was computed by this engine's model with its kv_type, so it can come back
    // (restore_kv's test); with no KV stored, the conversation was created with this model.
    bool same_model = false;
  };
  StoredSessionInfo stored_session_info(const std::string& id);

  EngineStats stats() const;

 private:
  std::unique_ptr<model::LoadedModel> model_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<StepBatcher> step_batcher_;
  mutable std::once_flag json_vocabulary_made_;
  mutable std::unique_ptr<JsonVocabulary> json_vocabulary_;
  std::unique_ptr<kv::BlockPool> pool_;
  std::unique_ptr<store::Store> store_;
  uint32_t context_length_ = 0;
  uint32_t worker_threads_ = 1;
  uint32_t idle_spill_ms_ = 0;
  text::TemplateKind default_template_ = text::TemplateKind::raw;

  // Sessions to spill, each taken with try_use_idle() while the registry is locked: a session
  // being destroyed leaves the registry first and then waits for that use to end.
  using SessionFilter = bool (*)(const Session&, double);
  struct SpillFailure {
    std::string session_id;
    std::string reason;  // the store's words, or the allocation's
    bool changed_elsewhere = false;  // the store holds another engine's version of it
  };
  struct SpillPass {
    size_t busy = 0;                     // sessions in use elsewhere or closing: not tried
    std::vector<SpillFailure> failures;
    std::vector<std::unique_lock<std::mutex>> held;  // spilled for room (stop_at_blocks)
  };
  // Sessions named in `skip` (whose spill failed earlier in the same call) are not tried.
  // Each session is given back as soon as its spill ends, but those spilled to make room
  // (stop_at_blocks), which come back in `held`. Failures are not logged here: the caller
  // logs them once it holds no other session (log_spill_failures), since a log callback may
  // wait for a thread whose call waits for one of them.
  SpillPass spill_where(SessionFilter filter, double arg, const Session* except,
                        size_t stop_at_blocks, const std::vector<SpillFailure>& skip = {});
  static void log_spill_failures(const std::vector<SpillFailure>& failures);
  // The budget is exhausted and the spills that would have made room failed.
  [[noreturn]] void fail_for_failed_spills(const std::vector<SpillFailure>& failures) const;

  // One make_room at a time: two at once would each find the other's candidates taken.
  std::mutex room_mutex_;
  std::mutex stored_ids_mutex_;  // hold_stored_ids

  // A session with this id is closing, its close run (or waited for) on the caller's thread
  // or on another (mutex_ held).
  bool closing_on(const std::string& id, bool this_thread) const;
  // A session with this id is closing on a thread other than the caller's (mutex_ held).
  bool closing_elsewhere(const std::string& id) const;
  // An open session has this id, or one whose close has not ended, on any thread (mutex_
  // held): the closing thread's own calls find it still open.
  bool open_or_closing(const std::string& id) const;
  // Refuses (invalid_argument) an id whose close waits for a call of the session's own on
  // this thread to return (closed from its callback): that close cannot end before this call
  // does, and until then the store holds the session as it was.
  void require_not_closing_here(const std::string& id) const;

  mutable std::mutex mutex_;  // guards the members below
  std::unordered_map<std::string, Session*> sessions_;
  struct Closing {
    const Session* session;
    std::thread::id thread;  // the one running its destructor; none before it runs
    // The thread whose calls do not wait for this close: its destructor's, or before that the
    // thread of the call still running on the session.
    std::thread::id closer() const;
  };
  // Its capacity covers every live and closing session, reserved at registration: a
  // destructor adds to it without allocating.
  std::vector<Closing> closing_;
  std::condition_variable closed_;  // a close ended
  size_t waiting_for_close_ = 0;

  std::unique_ptr<Janitor> janitor_;  // last: stopped first
};

}  // namespace parley::engine
