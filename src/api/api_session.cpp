// parley_session_*: argument checks, the busy flag, then engine::Session.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "api/api_guard.h"
#include "api/buffers.h"
#include "api/handles.h"
#include "api/options.h"
#include "common/shown_number.h"
#include "parley.h"
#include "text/chat_template.h"
#include "text/json_schema.h"
#include "text/stop_strings.h"
#include "text/utf8_stream.h"

namespace parley::api {
namespace {

engine::SessionOptions session_options_from(const parley_session_options* user) {
  engine::SessionOptions s;
  if (!user) return s;
  const auto o = read_options(user, "options");
  if (o.id) s.id = o.id;
  check_arg(!o.id || !s.id.empty(), "id is empty (pass NULL to generate one)");
  if (o.system_prompt) s.system_prompt = o.system_prompt;
  if (o.chat_template) {
    s.chat_template = text::template_from_name(o.chat_template);
    if (!s.chat_template) {
      fail(Status::invalid_argument, std::string("unknown chat_template '") + o.chat_template +
                                         "' (expected raw, llama2, chatml, zephyr or mistral)");
    }
  }
  if (o.cache_scope) s.cache_scope = o.cache_scope;
  check_arg(o.overflow == PARLEY_OVERFLOW_ERROR || o.overflow == PARLEY_OVERFLOW_DROP_OLDEST,
            "overflow is not a PARLEY_OVERFLOW_* value");
  s.overflow = engine::OverflowPolicy(o.overflow);
  check_arg(o.reserved0 == 0, "reserved0 must be 0");
  return s;
}

static_assert(text::StopStrings::kMaxCount == PARLEY_MAX_STOP_STRINGS);
static_assert(text::StopStrings::kMaxBytes == PARLEY_MAX_STOP_BYTES);

text::StopStrings stop_strings_from(const parley_generate_options& o) {
  using text::StopStrings;
  check_arg(o.reserved0 == 0, "reserved0 must be 0");
  if (o.n_stop > StopStrings::kMaxCount) {
    fail(Status::invalid_argument, "n_stop is " + std::to_string(o.n_stop) + "; at most " +
                                       std::to_string(StopStrings::kMaxCount) + " stop strings");
  }
  check_arg(o.n_stop == 0 || o.stop, "stop is NULL but n_stop is not 0");
  std::vector<std::string> strings;
  for (uint32_t i = 0; i < o.n_stop; ++i) {
    const std::string at = "stop[" + std::to_string(i) + "]";
    if (!o.stop[i]) fail(Status::invalid_argument, at + " is NULL");
    const std::string_view s = o.stop[i];
    if (s.empty() || s.size() > StopStrings::kMaxBytes) {
      fail(Status::invalid_argument, at + " has " + std::to_string(s.size()) +
                                         " bytes; a stop string has 1 to " +
                                         std::to_string(StopStrings::kMaxBytes));
    }
    if (!text::is_valid_utf8(s)) fail(Status::invalid_argument, at + " is not valid UTF-8");
    strings.emplace_back(s);
  }
  return StopStrings(std::move(strings));
}

engine::GenerateParams generate_params_from(const parley_generate_options* user) {
  parley_generate_options o;
  if (user) {
    o = read_options(user, "options");
  } else {
    parley_generate_options_init(&o);
  }
  engine::GenerateParams p;
  p.seed = o.seed;
  p.max_tokens = o.max_tokens;
  p.ignore_eos = o.ignore_eos != 0;
  p.sampler.temperature = o.temperature;
  p.sampler.top_k = o.top_k;
  // A zeroed struct means "off"; the sampler's range messages would not say that 0 is taken.
  require(o.top_p >= 0.0f && o.top_p <= 1.0f, Status::invalid_argument, [&] {
    return "top_p must be in [0, 1] (0 or 1 = off; got " + shown_float(o.top_p) + ")";
  });
  require(std::isfinite(o.repeat_penalty) && o.repeat_penalty >= 0.0f, Status::invalid_argument,
          [&] {
            return "repeat_penalty must be finite and >= 0 (0 or 1 = off; got " +
                   shown_float(o.repeat_penalty) + ")";
          });
  p.sampler.top_p = o.top_p == 0.0f ? 1.0f : o.top_p;
  p.sampler.min_p = o.min_p;
  p.sampler.repeat_penalty = o.repeat_penalty == 0.0f ? 1.0f : o.repeat_penalty;
  p.sampler.repeat_last_n = o.repeat_last_n;
  p.stop_strings = stop_strings_from(o);
  if (o.reply_prefix) p.reply_prefix = o.reply_prefix;
  if (o.format != PARLEY_FORMAT_TEXT && o.format != PARLEY_FORMAT_JSON) {
    fail(Status::invalid_argument, "format must be PARLEY_FORMAT_TEXT (0) or PARLEY_FORMAT_JSON "
                                   "(1), not " + std::to_string(o.format));
  }
  p.format = o.format == PARLEY_FORMAT_JSON ? engine::ReplyFormat::json : engine::ReplyFormat::text;
  if (o.json_schema && *o.json_schema) {
    check_arg(p.format == engine::ReplyFormat::json,
              "json_schema is set but format is PARLEY_FORMAT_TEXT (a schema asks for "
              "PARLEY_FORMAT_JSON)");
    p.json_schema = text::JsonSchema::compile(o.json_schema);
  }
  check_arg(o.n_logit_bias == 0 || o.logit_bias, "logit_bias is NULL but n_logit_bias is not 0");
  // No vocabulary has 2^24 tokens, and each is listed once at most: a larger count is a
  // garbage value, refused before it is read. The sampler checks the entries against the model.
  constexpr uint32_t kMaxLogitBias = 1u << 24;
  if (o.n_logit_bias > kMaxLogitBias) {
    fail(Status::invalid_argument, "n_logit_bias is " + std::to_string(o.n_logit_bias) +
                                       "; each token is listed once at most, and no vocabulary "
                                       "has more than " + std::to_string(kMaxLogitBias));
  }
  p.sampler.logit_bias.reserve(o.n_logit_bias);
  for (uint32_t i = 0; i < o.n_logit_bias; ++i) {
    p.sampler.logit_bias.push_back({o.logit_bias[i].token, o.logit_bias[i].bias});
  }
  return p;
}

parley_turn_stats turn_stats_to_c(const engine::TurnStats& s) {
  parley_turn_stats r{};
  r.prompt_tokens = s.prompt_tokens;
  r.reused_tokens = s.reused_tokens;
  r.computed_tokens = s.computed_tokens;
  r.generated_tokens = s.generated_tokens;
  r.ttft_ms = s.ttft_ms;
  r.tpot_ms = s.tpot_ms;
  r.restore_ms = s.restore_ms;
  r.kv_source = int32_t(s.kv_source);
  r.stop_reason = int32_t(s.stop_reason);
  r.stop_index = s.stop_index;
  return r;
}

// The part send and continue share: options in, text out through on_text, stats back.
template <class Run>
void generate(const parley_generate_options* o, parley_text_fn on_text, void* user,
              parley_turn_stats* stats, Run&& run) {
  if (stats) check_out_struct(stats, "stats");
  const auto params = generate_params_from(o);
  engine::TextSink sink;
  if (on_text) {
    sink = [&](std::string_view piece) {
      const std::string text(piece);  // NUL-terminated for C callers
      return on_text(text.c_str(), text.size(), user) == 0;
    };
  }
  engine::TurnStats turn_stats;
  try {
    run(params, sink, turn_stats);
  } catch (...) {
    // A turn kept despite the error (stopped, cut short by the KV budget, not yet stored:
    // also where committing it ran out of memory) has figures as real as a finished one's.
    if (stats && turn_stats.kept) write_out_struct(stats, turn_stats_to_c(turn_stats));
    throw;
  }
  if (stats) write_out_struct(stats, turn_stats_to_c(turn_stats));
}

// Ascending, so that a caller's list compares equal however the template gathered it (the
// template lists each id once).
std::vector<int32_t> ascending_end_ids(const engine::Session& session) {
  std::vector<int32_t> ids = session.end_ids();
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace
}  // namespace parley::api

using namespace parley;
using namespace parley::api;

extern "C" {

PARLEY_API parley_status parley_session_create(parley_engine* e, const parley_session_options* o,
                                               parley_session** out) {
  return guarded(__func__, [&] {
    check_arg(out, "out is NULL");
    *out = nullptr;
    auto engine = acquire(e);
    const auto options = session_options_from(o);
    auto handle = std::make_shared<parley_session>();
    handle->session = std::make_unique<engine::Session>(engine->engine, options);
    *out = register_session(std::move(handle));
  });
}

PARLEY_API parley_status parley_session_open(parley_engine* e, const char* id,
                                             parley_session** out) {
  return guarded(__func__, [&] {
    check_arg(out, "out is NULL");
    *out = nullptr;
    auto engine = acquire(e);
    check_arg(id && *id, "id is NULL or empty");
    auto handle = std::make_shared<parley_session>();
    handle->session = engine::Session::open(engine->engine, id);
    *out = register_session(std::move(handle));
  });
}

PARLEY_API parley_status parley_session_fork(parley_session* s, const char* new_id,
                                             parley_session** out) {
  return guarded(__func__, [&] {
    check_arg(out, "out is NULL");
    *out = nullptr;
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_arg(!new_id || *new_id, "new_id is empty (pass NULL to generate one)");
    auto fork = std::make_shared<parley_session>();
    fork->session = handle->session->fork(new_id ? new_id : "");
    *out = register_session(std::move(fork));
  });
}

PARLEY_API parley_status parley_session_suspend(parley_session* s) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    require(handle->session->has_store(), Status::unsupported,
            "suspend needs a session store (engine option store_path)");
    handle->session->spill();
  });
}

PARLEY_API parley_status parley_session_interrupt(parley_session* s) {
  return guarded(__func__, [&] { acquire(s)->session->interrupt(); });
}

PARLEY_API parley_status parley_session_rewind(parley_session* s, uint32_t n_turns) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    handle->session->rewind(n_turns);
  });
}

PARLEY_API parley_status parley_session_set_system_prompt(parley_session* s,
                                                           const char* system_prompt) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    handle->session->set_system_prompt(system_prompt ? system_prompt : "");
  });
}

PARLEY_API parley_status parley_session_set_overflow(parley_session* s, int32_t overflow) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    require(overflow == PARLEY_OVERFLOW_ERROR || overflow == PARLEY_OVERFLOW_DROP_OLDEST,
            Status::invalid_argument, [&] {
              return "overflow is not a PARLEY_OVERFLOW_* value (got " + std::to_string(overflow) +
                     ")";
            });
    handle->session->set_overflow(engine::OverflowPolicy(overflow));
  });
}

PARLEY_API void parley_session_close(parley_session* s) {
  if (!s) return;
  // A send running on another thread (or this call from its own callback) still holds the
  // handle: no one could stop it any more, so it stops now, and frees the handle when it
  // returns. The close begins now all the same: an open, a delete or a look at the stored
  // session of its id on another thread waits until the session is stored. A session
  // inherited through fork() comes back empty: the parent's, left alone.
  auto handle = unregister(s);
  if (handle && handle->session) handle->session->begin_close();
  handle.reset();
}

PARLEY_API parley_status parley_session_delete(parley_engine* e, const char* id) {
  return guarded(__func__, [&] {
    auto handle = acquire(e);
    check_arg(id && *id, "id is NULL or empty");
    handle->engine->delete_stored_session(id);
  });
}

PARLEY_API parley_status parley_session_get_info(parley_session* s, parley_session_info* out) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_out_struct(out, "out");
    const auto& session = *handle->session;
    parley_session_info r{};
    std::memcpy(r.id, session.id().c_str(), session.id().size() + 1);  // ids are <= 127 bytes
    r.n_turns = uint32_t(session.messages().size());
    r.n_tokens = uint32_t(session.tokens().size());
    r.state = int32_t(session.state());
    r.kv_bytes_resident = session.kv_bytes_resident();
    r.kv_bytes_stored = session.kv_bytes_stored();
    r.overflow = int32_t(session.overflow());
    const std::string_view chat_template = text::template_name(session.template_kind());
    static_assert(sizeof r.chat_template > 16);  // every template's name fits
    chat_template.copy(r.chat_template, sizeof r.chat_template - 1);
    write_out_struct(out, r);
  });
}

PARLEY_API parley_status parley_session_get_turn(parley_session* s, uint32_t index,
                                                 parley_turn* out) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_out_struct(out, "out");
    const auto& messages = handle->session->messages();
    if (index >= messages.size()) {
      fail(Status::not_found, "turn " + std::to_string(index) + " does not exist; the session has " +
                                  std::to_string(messages.size()));
    }
    handle->turn_text = messages[index].text;
    parley_turn r{};
    r.text = handle->turn_text.c_str();
    r.role = int32_t(messages[index].role);
    r.n_tokens = messages[index].n_tokens;
    write_out_struct(out, r);
  });
}

PARLEY_API parley_status parley_session_get_tokens(parley_session* s, int32_t* ids, size_t cap,
                                                   size_t* n_needed) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    write_ids(handle->session->tokens(), ids, cap, n_needed);
  });
}

PARLEY_API parley_status parley_session_get_end_ids(parley_session* s, int32_t* ids, size_t cap,
                                                    size_t* n_ids) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_arg(n_ids, "n_ids is NULL");
    write_ids(ascending_end_ids(*handle->session), ids, cap, n_ids);
  });
}

PARLEY_API parley_status parley_session_export(parley_session* s, char* buf, size_t cap,
                                               size_t* needed) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    write_string(handle->session->export_json(), buf, cap, needed);
  });
}

PARLEY_API parley_status parley_session_import(parley_engine* e, const char* json,
                                               const char* new_id, parley_session** out) {
  return guarded(__func__, [&] {
    check_arg(out, "out is NULL");
    *out = nullptr;
    auto engine = acquire(e);
    check_arg(json, "json is NULL");
    check_arg(!new_id || *new_id, "new_id is empty (pass NULL to keep the conversation's id)");
    auto handle = std::make_shared<parley_session>();
    handle->session = engine::Session::import_json(engine->engine, json, new_id ? new_id : "");
    *out = register_session(std::move(handle));
  });
}

PARLEY_API parley_status parley_session_send(parley_session* s, const char* user_text,
                                             const parley_generate_options* o,
                                             parley_text_fn on_text, void* user,
                                             parley_turn_stats* stats) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_arg(user_text, "user_text is NULL");
    generate(o, on_text, user, stats,
             [&](const engine::GenerateParams& params, const engine::TextSink& sink,
                 engine::TurnStats& turn_stats) {
               handle->session->send(user_text, params, sink, turn_stats);
             });
  });
}

PARLEY_API parley_status parley_session_continue(parley_session* s,
                                                 const parley_generate_options* o,
                                                 parley_text_fn on_text, void* user,
                                                 parley_turn_stats* stats) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    generate(o, on_text, user, stats,
             [&](const engine::GenerateParams& params, const engine::TextSink& sink,
                 engine::TurnStats& turn_stats) {
               handle->session->continue_reply(params, sink, turn_stats);
             });
  });
}

PARLEY_API parley_status parley_session_prepare(parley_session* s, parley_turn_stats* stats) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    if (stats) check_out_struct(stats, "stats");
    engine::TurnStats prepare_stats;
    try {
      handle->session->prepare(prepare_stats);
    } catch (const Error& e) {
      // Stopped: what was computed is kept, and the figures say how much.
      if (stats && e.status() == Status::cancelled) {
        write_out_struct(stats, turn_stats_to_c(prepare_stats));
      }
      throw;
    }
    if (stats) write_out_struct(stats, turn_stats_to_c(prepare_stats));
  });
}

PARLEY_API parley_status parley_session_score_replies(parley_session* s, const char* user_text,
                                                      const char* const* replies,
                                                      size_t n_replies, uint32_t flags,
                                                      double* logprobs, uint32_t* n_tokens) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_arg(replies, "replies is NULL");
    check_arg(logprobs, "logprobs is NULL");
    if (n_replies == 0 || n_replies > PARLEY_MAX_SCORED_REPLIES) {
      fail(Status::invalid_argument, "n_replies is " + std::to_string(n_replies) +
                                         "; one call scores 1 to " +
                                         std::to_string(PARLEY_MAX_SCORED_REPLIES));
    }
    check_arg((flags & ~PARLEY_SCORE_WITH_END) == 0, "flags has bits other than PARLEY_SCORE_*");
    std::vector<std::string_view> texts;
    for (size_t i = 0; i < n_replies; ++i) {
      if (!replies[i]) fail(Status::invalid_argument, "replies[" + std::to_string(i) + "] is NULL");
      texts.emplace_back(replies[i]);
    }
    const bool with_end = (flags & PARLEY_SCORE_WITH_END) != 0;
    auto& session = *handle->session;
    const auto scores = user_text ? session.score_replies(user_text, texts, with_end)
                                  : session.score_continuations(texts, with_end);
    for (size_t i = 0; i < n_replies; ++i) {
      logprobs[i] = scores[i].logprob;
      if (n_tokens) n_tokens[i] = scores[i].n_tokens;
    }
  });
}

PARLEY_API parley_status parley_session_count_tokens(parley_session* s, const char* user_text,
                                                     uint32_t* prompt_tokens,
                                                     uint32_t* context_left) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_arg(user_text, "user_text is NULL");
    const auto& session = *handle->session;
    const size_t n = session.count_turn_tokens(user_text);
    const size_t used = session.tokens().size() + n;
    const size_t context = session.context_length();
    if (prompt_tokens) *prompt_tokens = uint32_t(std::min<size_t>(n, UINT32_MAX));
    if (context_left) *context_left = uint32_t(used < context ? context - used : 0);
  });
}

PARLEY_API parley_status parley_session_add_exchange(parley_session* s, const char* user_text,
                                                     const char* reply_text) {
  return guarded(__func__, [&] {
    auto handle = acquire(s);
    SessionUse use(*handle);
    check_arg(user_text, "user_text is NULL");
    check_arg(reply_text, "reply_text is NULL");
    handle->session->add_exchange(user_text, reply_text);
  });
}

}  // extern "C"
