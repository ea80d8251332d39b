// parley_engine_* and parley_set_log_callback: argument checks, then engine::Engine.
#include <cstring>
#include <string_view>

#include "api/api_guard.h"
#include "api/buffers.h"
#include "api/handles.h"
#include "api/options.h"
#include "common/load_progress.h"
#include "common/log.h"
#include "common/utf8_sequence.h"
#include "parley.h"

namespace parley::api {
namespace {

kv::KvType kv_type_from(int32_t v) {
  switch (v) {
    case PARLEY_KV_DEFAULT:
    case PARLEY_KV_INT8: return kv::KvType::int8;
    case PARLEY_KV_F16: return kv::KvType::f16;
    case PARLEY_KV_F32: return kv::KvType::f32;
    default:
      fail(Status::invalid_argument, "kv_type " + std::to_string(v) +
                                         " is not one of PARLEY_KV_DEFAULT, _INT8, _F16, _F32");
  }
}

engine::EngineOptions engine_options_from(const parley_engine_options& o) {
  check_arg(o.model_path && *o.model_path, "model_path is NULL or empty");
  check_arg(!o.store_path || *o.store_path, "store_path is empty (pass NULL for no store)");
  // SQLite's in-memory database would lose every conversation at close, and cannot run WAL.
  check_arg(!o.store_path || std::string_view(o.store_path) != ":memory:",
            "store_path \":memory:\" is no file: the store must be one (pass NULL to keep the "
            "sessions in memory only)");
  check_arg(o.n_threads >= 0, "n_threads is negative");
  // A bound far above any machine's cores: past it, thread creation would fail or crawl.
  constexpr int32_t kMaxThreads = 1024;
  if (o.n_threads > kMaxThreads) {
    fail(Status::invalid_argument, "n_threads " + std::to_string(o.n_threads) +
                                       " is more than " + std::to_string(kMaxThreads));
  }
  engine::EngineOptions e;
  e.model_path = o.model_path;
  e.device = o.device && *o.device ? o.device : "auto";
  e.n_threads = o.n_threads;
  e.kv_type = kv_type_from(o.kv_type);
  e.kv_budget_bytes = o.kv_budget_bytes;
  e.context_length = o.context_length;
  if (o.store_path) e.store_path = o.store_path;
  e.idle_spill_ms = o.idle_spill_ms;
  return e;
}

// The bytes of `text`'s first characters that fit in `room`: a cut never splits a UTF-8
// sequence (bytes that are no valid UTF-8 count one maximal subpart at a time).
size_t utf8_prefix_length(std::string_view text, size_t room) {
  if (text.size() <= room) return text.size();
  size_t n = 0;
  while (n < room) {
    const size_t length = next_utf8_sequence(text.substr(n)).length;
    if (n + length > room) break;
    n += length;
  }
  return n;
}

// Copies a string into a fixed char array, cut to fit at a character boundary and always
// NUL-terminated.
template <size_t N>
void copy_name(char (&dst)[N], const std::string& src) {
  const size_t n = utf8_prefix_length(src, N - 1);
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace
}  // namespace parley::api

using namespace parley;
using namespace parley::api;

extern "C" {

PARLEY_API void parley_set_log_callback(parley_log_fn fn, void* user) {
  try {
    log::set_sink(fn, user);
  } catch (...) {  // out of memory: nothing crosses the ABI, and the previous sink stays
  }
}

PARLEY_API parley_status parley_engine_open(const parley_engine_options* o, parley_engine** out) {
  return guarded(__func__, [&] {
    check_arg(out, "out is NULL");
    *out = nullptr;
    const parley_engine_options given = read_options(o, "options");
    auto options = engine_options_from(given);
    LoadProgress progress;
    if (given.on_load_progress) {
      progress = LoadProgress([fn = given.on_load_progress, user = given.load_progress_user](
                                  float fraction) { return fn(fraction, user) == 0; });
    }
    options.load_progress = &progress;
    progress.start();
    auto handle = std::make_shared<parley_engine>();
    handle->engine = std::make_shared<engine::Engine>(options);
    // Stopped at 1, the engine goes as it came: closed by its last reference, here.
    progress.finish();
    *out = register_engine(std::move(handle));
  });
}

PARLEY_API void parley_engine_close(parley_engine* e) {
  if (!e) return;
  auto handle = unregister(e);
  if (!handle) return;  // also an engine inherited through fork(): the parent's, left alone
  // Live sessions go to the store now; they stay usable, and the engine itself is freed when
  // the last of them closes.
  try {
    handle->engine->spill_all();
  } catch (...) {
    // spill_all logs what it could not spill; closing never fails
  }
}

PARLEY_API parley_status parley_engine_get_stats(parley_engine* e, parley_engine_stats* out) {
  return guarded(__func__, [&] {
    auto handle = acquire(e);
    check_out_struct(out, "out");
    const auto s = handle->engine->stats();
    parley_engine_stats r{};
    r.sessions_active = s.sessions_active;
    r.sessions_idle = s.sessions_idle;
    r.sessions_spilled = s.sessions_spilled;
    r.store_bytes = s.store_bytes;
    r.kv_blocks_total = s.blocks.total;
    r.kv_blocks_used = s.blocks.used;
    r.kv_blocks_shared = s.blocks.shared;
    r.kv_blocks_cached = s.blocks.cached;
    r.prefix_hits = s.blocks.prefix_hits;
    r.prefix_misses = s.blocks.prefix_misses;
    r.kv_bytes_per_token = s.kv_bytes_per_token;
    r.kv_bytes_resident = s.kv_bytes_resident;
    r.kv_budget_bytes = s.kv_budget_bytes;
    r.decode_steps = s.decode.steps;
    r.decode_tokens = s.decode.tokens;
    write_out_struct(out, r);
  });
}

PARLEY_API parley_status parley_engine_get_model_info(parley_engine* e, parley_model_info* out) {
  return guarded(__func__, [&] {
    auto handle = acquire(e);
    check_out_struct(out, "out");
    const auto& eng = *handle->engine;
    const auto& cfg = eng.config();
    parley_model_info r{};
    copy_name(r.name, cfg.name);
    copy_name(r.architecture, cfg.architecture);
    copy_name(r.chat_template, std::string(text::template_name(eng.default_template())));
    r.n_vocab = uint32_t(cfg.n_vocab);
    r.n_layers = uint32_t(cfg.n_layers);
    r.n_heads = uint32_t(cfg.n_heads);
    r.n_kv_heads = uint32_t(cfg.n_kv_heads);
    r.head_dim = uint32_t(cfg.head_dim);
    r.embedding_length = uint32_t(cfg.dim);
    r.context_length = eng.context_length();
    r.n_params = eng.model().n_params;
    copy_name(r.backend, handle->engine->backend().name());
    write_out_struct(out, r);
  });
}

PARLEY_API parley_status parley_store_list_sessions(parley_engine* e, char* buf, size_t cap,
                                                    size_t* needed) {
  return guarded(__func__, [&] {
    auto handle = acquire(e);
    std::string list;
    if (auto* store = handle->engine->store()) {
      for (const auto& id : store->list_sessions()) {
        if (!list.empty()) list += '\n';
        list += id;
      }
    }
    write_string(list, buf, cap, needed);
  });
}

PARLEY_API parley_status parley_store_get_session_info(parley_engine* e, const char* id,
                                                       parley_stored_session_info* out) {
  return guarded(__func__, [&] {
    auto handle = acquire(e);
    check_arg(id && *id, "id is NULL or empty");
    check_out_struct(out, "out");
    const auto info = handle->engine->stored_session_info(id);
    parley_stored_session_info r{};
    r.created_unix_ms = info.summary.session.created_ms;
    r.updated_unix_ms = info.summary.session.updated_ms;
    r.n_turns = info.summary.n_turns;
    r.is_open = info.open ? 1 : 0;
    r.kv_bytes_stored = info.summary.kv_bytes;
    r.same_model = info.same_model ? 1 : 0;
    write_out_struct(out, r);
  });
}

}  // extern "C"
