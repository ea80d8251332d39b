#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <new>
#include <random>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/memory_room.h"
#include "common/shown_id.h"
#include "common/thread_count.h"
#include "engine/clock.h"
#include "engine/janitor.h"
#include "engine/session.h"
#include "model/weight_release.h"

namespace parley::engine {
namespace {

// Whether a stored conversation is this engine's: restore_kv takes a stored KV only from the
// same model and kv_type; without one, the model it was created with decides.
bool stored_with(const store::StoredSummary& summary, uint64_t fingerprint, kv::KvType type) {
  if (summary.kv_model_fingerprint) {
    return *summary.kv_model_fingerprint == fingerprint && summary.kv_type == int32_t(type);
  }
  return summary.session.model_fingerprint == fingerprint;
}

// A quarter of the memory the process may use (the machine's, or its memory cgroup's limit:
// a container's), and at most three quarters of what is left once the model is in memory:
// the KV must not grow until the machine swaps or the kernel ends the process. At least one
// block.
uint64_t automatic_kv_budget(uint64_t block_bytes) {
  const uint64_t limit = memory_limit();
  uint64_t budget = limit > 0 ? limit / 4 : uint64_t(1) << 30;
  if (const auto room = memory_room()) budget = std::min(budget, room->bytes / 4 * 3);
  return std::max(budget, block_bytes);
}

void require_budget_holds_a_block(uint64_t budget, const kv::BlockLayout& layout) {
  require(budget >= layout.block_bytes(), Status::invalid_argument,
          "kv_budget_bytes " + std::to_string(budget) + " holds no KV block: a block of " +
              std::to_string(kv::kBlockTokens) + " tokens takes " +
              std::to_string(layout.block_bytes()) + " bytes with this model and KV type");
}

std::string random_session_id() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "s-%08x%08x%08x", rd(), rd(), rd());
  return buf;
}

// The device string is checked before the model loads, so that a typo costs no load.
std::unique_ptr<model::LoadedModel> load_for(const EngineOptions& options) {
  backend::parse_device(options.device);
  return model::load_model(options.model_path, options.load_progress);
}

// The bytes a backend takes: every distinct weight once (a tied output matrix is the
// embedding's bytes).
uint64_t backend_weight_bytes(const model::Weights& weights) {
  std::unordered_set<const std::byte*> seen;
  uint64_t bytes = 0;
  for (const model::TensorView* v : model::weight_views(weights)) {
    if (!v->empty() && seen.insert(v->data).second) bytes += v->n_bytes;
  }
  return bytes;
}

}  // namespace

Engine::Engine(const EngineOptions& options) : Engine(load_for(options), options) {}

Engine::Engine(std::unique_ptr<model::LoadedModel> model, const EngineOptions& options)
    : model_(std::move(model)) {
  const auto& cfg = model_->config;
  tokenizer_ = std::make_unique<text::Tokenizer>(model_->tokenizer);
  require(tokenizer_->n_vocab() == cfg.n_vocab, Status::bad_model,
          "the tokenizer has " + std::to_string(tokenizer_->n_vocab()) +
              " pieces but the model's vocab_size is " + std::to_string(cfg.n_vocab));

  context_length_ = options.context_length ? options.context_length : uint32_t(cfg.context_length);
  worker_threads_ = uint32_t(resolved_thread_count(options.n_threads));
  require(context_length_ <= uint32_t(cfg.context_length), Status::invalid_argument,
          "context_length " + std::to_string(options.context_length) +
              " exceeds the model's trained context of " + std::to_string(cfg.context_length));

  const kv::BlockLayout layout(options.kv_type,
                               kv::KvShape{cfg.n_layers, cfg.n_kv_heads, cfg.head_dim});
  // Checked before the weights load: a wrong budget costs no load.
  if (options.kv_budget_bytes) require_budget_holds_a_block(options.kv_budget_bytes, layout);
  default_template_ = text::template_from_model(cfg.chat_template);
  if (default_template_ == text::TemplateKind::raw && !cfg.chat_template.empty()) {
    // A chat model fed as plain continuation answers badly; nothing else would show why.
    log::warn_line(
        "the model's chat template is not one Parley knows (llama2, chatml, zephyr, mistral): "
        "sessions that name no template use 'raw', plain continuation");
  }
  // The engine's model serves this backend only: what the backend copies, the model lets go.
  // Progress follows the bytes the backend has taken (a backend given up for another, CUDA
  // for the CPU, counts anew: the bar waits until the new count passes the old).
  LoadProgress silent;
  LoadProgress& progress = options.load_progress ? *options.load_progress : silent;
  progress.begin_stage(backend_weight_bytes(model_->weights), 1.0);
  backend_ = backend::make_backend(
      options.device, *model_, options.n_threads,
      [this](const model::TensorView& v) { model::release_weight_bytes(*model_, v); },
      [&](uint64_t bytes_so_far) { progress.reach(bytes_so_far); });
  const uint64_t budget = options.kv_budget_bytes ? options.kv_budget_bytes
                                                  : automatic_kv_budget(layout.block_bytes());
  try {
    pool_ = std::make_unique<kv::BlockPool>(layout, budget);
  } catch (const std::bad_alloc&) {
    // The pool keeps a few words per block it may hold, from the start.
    fail(Status::out_of_memory,
         "kv_budget_bytes " + std::to_string(budget) + " holds " +
             std::to_string(budget / layout.block_bytes()) +
             " KV blocks, more than the memory for their bookkeeping allows: give a budget "
             "the machine's memory can hold (0 = automatic)");
  }
  step_batcher_ = std::make_unique<StepBatcher>(*backend_, options.batch_decode);
  if (!options.store_path.empty()) {
    store_ = std::make_unique<store::Store>(options.store_path, options.store_options);
    idle_spill_ms_ = options.idle_spill_ms;
    if (idle_spill_ms_ > 0) janitor_ = std::make_unique<Janitor>(*this, idle_spill_ms_);
  }
  log::info_line("loaded '" + cfg.name + "' on " + backend_->name() + ", KV " +
                 kv::kv_type_name(kv_type()) + ", context " + std::to_string(context_length_));
}

Engine::~Engine() { janitor_.reset(); }

const JsonVocabulary& Engine::json_vocabulary() const {
  std::call_once(json_vocabulary_made_,
                 [&] { json_vocabulary_ = std::make_unique<JsonVocabulary>(*tokenizer_); });
  return *json_vocabulary_;
}

uint64_t Engine::prefix_root(std::string_view cache_scope) const {
  return kv::prefix_root(model_->fingerprint, kv_type(), cache_scope);
}

std::string Engine::register_session(Session* session, const std::string& requested,
                                     bool reopening) {
  // The store is asked outside the lock; a race between two creators of one id ends at the
  // store's primary key.
  auto stored = [&](const std::string& id) {
    return store_ && !reopening && store_->load_session(id).has_value();
  };
  // Room for this session's close to come (begin_closing) is kept before it is registered.
  const auto keep_room_to_close = [&] {
    const size_t needed = sessions_.size() + closing_.size() + 1;
    if (closing_.capacity() < needed) closing_.reserve(std::max(needed, 2 * closing_.capacity()));
  };
  if (requested.empty()) {
    for (;;) {
      std::string id = random_session_id();
      if (stored(id)) continue;
      std::lock_guard lock(mutex_);
      keep_room_to_close();
      if (sessions_.emplace(id, session).second) return id;
    }
  }
  if (!reopening) require_free_session_id(requested);
  std::lock_guard lock(mutex_);
  keep_room_to_close();
  // A reopen read the store while the session was still open (its close had not begun when
  // the reopen waited for closes): in use, as when the close had not begun at all.
  const bool closing_since_read = reopening && closing_elsewhere(requested);
  require(!closing_since_read && sessions_.emplace(requested, session).second,
          Status::invalid_argument,
          "session id " + shown_id(requested) + " is already in use by an open session");
  return requested;
}

void Engine::require_free_session_id(const std::string& id) {
  const bool in_use = [&] {
    std::lock_guard lock(mutex_);
    if (store_) require_not_closing_here(id);  // (without a store, nothing waits for the close)
    return sessions_.count(id) > 0;
  }();
  // An open session is named first: "open it instead" would send the caller to a refusal.
  require(!in_use, Status::invalid_argument,
          "session id " + shown_id(id) + " is already in use by an open session");
  require(!store_ || !store_->load_session(id).has_value(), Status::invalid_argument,
          "session id " + shown_id(id) + " belongs to a stored conversation; open it instead");
}

void Engine::require_not_open(const std::string& id) {
  std::lock_guard lock(mutex_);
  require_not_closing_here(id);
  require(!open_or_closing(id), Status::invalid_argument,
          "session id " + shown_id(id) + " is already in use by an open session");
}

void Engine::unregister_session(const std::string& id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

void Engine::begin_closing(const Session* session) {
  std::lock_guard lock(mutex_);
  const auto here = std::this_thread::get_id();
  const auto begun = std::find_if(closing_.begin(), closing_.end(),
                                  [&](const Closing& c) { return c.session == session; });
  if (begun != closing_.end()) {
    begun->thread = here;  // closed while in use (begin_closing_in_use): the close runs here
    return;
  }
  const auto live = sessions_.find(session->id());
  if (live != sessions_.end() && live->second == session) sessions_.erase(live);
  closing_.push_back({session, here});
}

void Engine::begin_closing_in_use(const Session* session) {
  std::lock_guard lock(mutex_);
  const auto live = sessions_.find(session->id());
  // A handle closes once: a live session is not among the closing ones yet.
  if (live == sessions_.end() || live->second != session) return;
  sessions_.erase(live);
  closing_.push_back({session, std::thread::id()});
}

void Engine::end_closing(const Session* session) {
  {
    std::lock_guard lock(mutex_);
    const auto it = std::find_if(closing_.begin(), closing_.end(),
                                 [&](const Closing& c) { return c.session == session; });
    if (it != closing_.end()) closing_.erase(it);
  }
  closed_.notify_all();
}

std::thread::id Engine::Closing::closer() const {
  return thread != std::thread::id() ? thread : session->user_thread();
}

bool Engine::closing_on(const std::string& id, bool this_thread) const {
  const auto self = std::this_thread::get_id();
  return std::any_of(closing_.begin(), closing_.end(), [&](const Closing& c) {
    return c.session->id() == id && (c.closer() == self) == this_thread;
  });
}

bool Engine::closing_elsewhere(const std::string& id) const { return closing_on(id, false); }

void Engine::require_not_closing_here(const std::string& id) const {
  require(!closing_on(id, true), Status::invalid_argument,
          "session " + shown_id(id) +
              " is still being closed: a call of its own under way on this thread (this "
              "callback's) holds it, and it is stored when that call returns");
}

bool Engine::open_or_closing(const std::string& id) const {
  return sessions_.count(id) > 0 ||
         std::any_of(closing_.begin(), closing_.end(),
                     [&](const Closing& c) { return c.session->id() == id; });
}

void Engine::wait_until_closed(const std::string& id) {
  std::unique_lock lock(mutex_);
  if (!closing_elsewhere(id)) return;
  ++waiting_for_close_;
  closed_.wait(lock, [&] { return !closing_elsewhere(id); });
  --waiting_for_close_;
}

size_t Engine::calls_waiting_for_close() const {
  std::lock_guard lock(mutex_);
  return waiting_for_close_;
}

std::unique_lock<std::mutex> Engine::hold_stored_id(const std::string& id) {
  for (;;) {
    wait_until_closed(id);
    auto held = hold_stored_ids();
    std::lock_guard lock(mutex_);
    // A session opened and closed again between the wait and the lock: wait for that too.
    if (!closing_elsewhere(id)) return held;
  }
}

Engine::SpillPass Engine::spill_where(SessionFilter filter, double arg, const Session* except,
                                      size_t stop_at_blocks,
                                      const std::vector<SpillFailure>& skip) {
  SpillPass pass;
  if (!store_) return pass;
  const auto failed_before = [&](const std::string& id) {
    return std::any_of(skip.begin(), skip.end(),
                       [&](const SpillFailure& f) { return f.session_id == id; });
  };
  struct Candidate {
    Session* session;
    std::unique_lock<std::mutex> use;
  };
  std::vector<Candidate> candidates;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, s] : sessions_) {
      if (s == except || s->spilled() || !filter(*s, arg) || failed_before(id)) continue;
      // A session in a call on this thread (closed from its callback) holds its state
      // already: try_lock on a mutex this thread owns is undefined.
      if (s->user_thread() == std::this_thread::get_id()) {
        ++pass.busy;
        continue;
      }
      auto use = s->try_use_idle();
      if (use) {
        candidates.push_back({s, std::move(use)});
      } else {
        ++pass.busy;
      }
    }
    // A closing session is about to store its last spill and let its blocks go.
    pass.busy += std::count_if(closing_.begin(), closing_.end(),
                               [&](const Closing& c) { return c.session != except; });
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.session->last_used_ms() < b.session->last_used_ms();
  });
  for (auto& c : candidates) {
    if (stop_at_blocks && pool_->can_allocate(stop_at_blocks)) break;
    try {
      c.session->spill();
      // Room made for a write stays held until the write is tried, lest its session take
      // it back.
      if (stop_at_blocks) pass.held.push_back(std::move(c.use));
    } catch (const std::exception& e) {  // storage, or memory ran out: the KV stays resident
      const bool changed_elsewhere = dynamic_cast<const ChangedElsewhere*>(&e) != nullptr;
      pass.failures.push_back({c.session->id(), e.what(), changed_elsewhere});
    }
    if (c.use) c.use.unlock();  // its caller, waiting for the spill, goes on
  }
  return pass;
}

void Engine::log_spill_failures(const std::vector<SpillFailure>& failures) {
  for (const SpillFailure& f : failures)
    log::warn_line("cannot spill session " + shown_id(f.session_id) + ": " + f.reason);
}

bool Engine::make_room(size_t n_blocks, const Session* except) {
  if (pool_->can_allocate(n_blocks)) return true;
  return write_with_room(except, {[] { return true; }, [n_blocks] { return n_blocks; }, 0});
}

bool Engine::write_with_room(const Session* writer, const KvWrite& kv_write) {
  constexpr double kRoomWaitMs = 500;
  const auto beyond_budget = [&] {
    return kv_write.needed() + kv_write.held > pool_->capacity_blocks();
  };
  const auto written = [&] { return pool_->can_allocate(kv_write.needed()) && kv_write.write(); };
  if (beyond_budget()) return false;
  std::lock_guard room(room_mutex_);
  const double give_up = now_ms() + kRoomWaitMs;
  // A session whose spill failed is not tried again for this write: the store would most
  // likely refuse it again (a full disk stays full), after all of its KV was encoded anew.
  std::vector<SpillFailure> failed;
  for (;;) {
    if (written()) return true;
    if (beyond_budget()) return false;
    SpillPass pass = spill_where([](const Session&, double) { return true; }, 0, writer,
                                 kv_write.needed(), failed);
    const bool room_taken = written();
    pass.held.clear();
    log_spill_failures(pass.failures);  // with no session held but the writer
    std::move(pass.failures.begin(), pass.failures.end(), std::back_inserter(failed));
    if (room_taken) return true;
    // Sessions in use elsewhere may be idle, or spilled by the janitor, a moment later. Once
    // spills fail, nothing else is worth the wait.
    const bool worth_waiting = pass.busy > 0 || failed.empty();
    if (!store_ || !worth_waiting || now_ms() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!failed.empty()) fail_for_failed_spills(failed);
  return false;
}

void Engine::fail_for_failed_spills(const std::vector<SpillFailure>& failures) const {
  // OUT_OF_MEMORY, as when nothing could be spilled: the write did not happen, and callers
  // that end a reply where the budget runs out keep it. The message says why.
  const SpillFailure& first = failures.front();
  const std::string others =
      failures.size() > 1
          ? " (the spills of " + std::to_string(failures.size() - 1) + " more sessions failed too)"
          : "";
  // Free space helps a store that refused a write, not one that holds another engine's
  // version of the conversation: closing that session lets its KV go.
  const bool all_changed_elsewhere = std::all_of(
      failures.begin(), failures.end(), [](const SpillFailure& f) { return f.changed_elsewhere; });
  const std::string remedy = all_changed_elsewhere
                                 ? "close sessions (one another engine changed first)"
                                 : "free space for the store, close sessions";
  fail(Status::out_of_memory, pool_->budget_words() + " is exhausted, and spilling session " +
                                  shown_id(first.session_id) +
                                  " to the store to make room failed: " + first.reason + others +
                                  "; " + remedy + ", or raise kv_budget_bytes");
}

size_t Engine::spill_idle(double idle_since_ms) {
  const SpillPass pass = spill_where(
      [](const Session& s, double since) { return s.last_used_ms() <= since; }, idle_since_ms,
      nullptr, 0);
  log_spill_failures(pass.failures);
  return pass.failures.size();
}

void Engine::spill_all() {
  log_spill_failures(
      spill_where([](const Session&, double) { return true; }, 0, nullptr, 0).failures);
}

void Engine::delete_stored_session(const std::string& id) {
  require(
      store_ != nullptr, Status::not_found,
      "no session store is open (set store_path), so there is no stored session " + shown_id(id));
  const auto no_open_meanwhile = hold_stored_id(id);
  {
    std::lock_guard lock(mutex_);
    require_not_closing_here(id);
    require(!open_or_closing(id), Status::invalid_argument,
            "session " + shown_id(id) + " is open; close it before deleting it");
  }
  store_->delete_session(id);
}

Engine::StoredSessionInfo Engine::stored_session_info(const std::string& id) {
  require(
      store_ != nullptr, Status::not_found,
      "no session store is open (set store_path), so there is no stored session " + shown_id(id));
  wait_until_closed(id);  // a closing session's last turns and KV are part of the answer
  auto summary = store_->session_summary(id);
  require(summary.has_value(), Status::not_found, "no stored session " + shown_id(id));
  StoredSessionInfo info;
  info.same_model = stored_with(*summary, model_->fingerprint, kv_type());
  info.summary = std::move(*summary);
  std::lock_guard lock(mutex_);
  info.open = open_or_closing(id);  // as of the summary read
  return info;
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard lock(mutex_);
    const double now = now_ms();
    for (const auto& [id, session] : sessions_) {
      switch (session->state(now, idle_spill_ms_)) {
        case SessionState::active: ++s.sessions_active; break;
        case SessionState::idle: ++s.sessions_idle; break;
        case SessionState::spilled: ++s.sessions_spilled; break;
      }
    }
  }
  s.blocks = pool_->stats();
  s.kv_bytes_per_token = kv::kv_bytes_per_token(kv_type(), kv_shape());
  s.kv_bytes_resident = (s.blocks.used + s.blocks.cached) * pool_->layout().block_bytes();
  s.kv_budget_bytes = pool_->budget_bytes();
  if (store_) s.store_bytes = store_->file_bytes();
  s.decode = step_batcher_->stats();
  return s;
}

}  // namespace parley::engine
