// Rows: NULL for every pointer argument of every function. NULL handles and required
// pointers are INVALID_ARGUMENT; pointers the header marks optional (options, callback,
// stats, a buffer with cap 0) are accepted; close(NULL) and init(NULL) are no-ops.
#include <string>
#include <utility>

#include "misuse_matrix.h"

namespace parley::test {
namespace {

constexpr parley_status kInvalid = PARLEY_E_INVALID_ARGUMENT;

parley_engine_options engine_options(MisuseWorld& w) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = w.model().c_str();
  o.n_threads = 1;
  return o;
}

// A call that has no status of its own: OK when it returned (not crashing is the check).
template <typename F>
parley_status returns(F f) {
  f();
  return PARLEY_OK;
}

}  // namespace

MisuseRows null_pointer_rows() {
  MisuseRows r;
  auto add = [&](const char* fn, const char* what, parley_status st, auto call) {
    r.push_back({fn, what, st, call});
  };
  auto quiet = [&](const char* fn, const char* what, auto call) {
    r.push_back({fn, what, PARLEY_OK, call, false});
  };

  // Engine.
  add("parley_engine_open", "options NULL", kInvalid, [](MisuseWorld&) {
    parley_engine* e = nullptr;
    return parley_engine_open(nullptr, &e);
  });
  add("parley_engine_open", "out NULL", kInvalid, [](MisuseWorld& w) {
    const auto o = engine_options(w);
    return parley_engine_open(&o, nullptr);
  });
  add("parley_engine_open", "model_path NULL", kInvalid, [](MisuseWorld& w) {
    auto o = engine_options(w);
    o.model_path = nullptr;
    parley_engine* e = nullptr;
    return parley_engine_open(&o, &e);
  });
  add("parley_engine_open", "store_path NULL means no store", PARLEY_OK, [](MisuseWorld& w) {
    auto o = engine_options(w);
    o.store_path = nullptr;
    o.device = nullptr;  // NULL device = "auto"
    parley_engine* e = nullptr;
    const parley_status st = parley_engine_open(&o, &e);
    parley_engine_close(e);
    return st;
  });
  quiet("parley_engine_close", "NULL is a no-op", [](MisuseWorld&) {
    return returns([] { parley_engine_close(nullptr); });
  });
  quiet("parley_engine_options_init_sized", "NULL is a no-op", [](MisuseWorld&) {
    return returns([] { parley_engine_options_init_sized(nullptr, sizeof(parley_engine_options)); });
  });
  quiet("parley_session_options_init_sized", "NULL is a no-op", [](MisuseWorld&) {
    return returns([] { parley_session_options_init_sized(nullptr, sizeof(parley_session_options)); });
  });
  quiet("parley_generate_options_init_sized", "NULL is a no-op", [](MisuseWorld&) {
    return returns([] { parley_generate_options_init_sized(nullptr, sizeof(parley_generate_options)); });
  });
  quiet("parley_set_log_callback", "NULL restores the default", [](MisuseWorld&) {
    return returns([] { parley_set_log_callback(nullptr, nullptr); });
  });
  add("parley_engine_get_stats", "engine NULL", kInvalid, [](MisuseWorld&) {
    parley_engine_stats s;
    s.struct_size = sizeof s;
    return parley_engine_get_stats(nullptr, &s);
  });
  add("parley_engine_get_stats", "out NULL", kInvalid,
      [](MisuseWorld& w) { return parley_engine_get_stats(w.engine(), nullptr); });
  add("parley_engine_get_model_info", "engine NULL", kInvalid, [](MisuseWorld&) {
    parley_model_info m;
    m.struct_size = sizeof m;
    return parley_engine_get_model_info(nullptr, &m);
  });
  add("parley_engine_get_model_info", "out NULL", kInvalid,
      [](MisuseWorld& w) { return parley_engine_get_model_info(w.engine(), nullptr); });
  add("parley_store_get_session_info", "engine NULL", kInvalid, [](MisuseWorld&) {
    parley_stored_session_info info{};
    info.struct_size = sizeof info;
    return parley_store_get_session_info(nullptr, "x", &info);
  });
  add("parley_store_get_session_info", "id NULL", kInvalid, [](MisuseWorld& w) {
    parley_stored_session_info info{};
    info.struct_size = sizeof info;
    return parley_store_get_session_info(w.engine_with_store(), nullptr, &info);
  });
  add("parley_store_get_session_info", "out NULL", kInvalid, [](MisuseWorld& w) {
    return parley_store_get_session_info(w.engine_with_store(), "x", nullptr);
  });
  add("parley_store_list_sessions", "engine NULL", kInvalid, [](MisuseWorld&) {
    size_t n = 0;
    return parley_store_list_sessions(nullptr, nullptr, 0, &n);
  });
  add("parley_store_list_sessions", "needed NULL", kInvalid, [](MisuseWorld& w) {
    char b[8];
    return parley_store_list_sessions(w.engine(), b, sizeof b, nullptr);
  });
  add("parley_store_list_sessions", "buf NULL with cap > 0", kInvalid, [](MisuseWorld& w) {
    size_t n = 0;
    return parley_store_list_sessions(w.engine(), nullptr, 8, &n);
  });
  add("parley_store_list_sessions", "buf NULL with cap 0 asks the size", PARLEY_OK,
      [](MisuseWorld& w) {
        size_t n = 0;
        return parley_store_list_sessions(w.engine_with_store(), nullptr, 0, &n);
      });

  // Sessions.
  add("parley_session_create", "engine NULL", kInvalid, [](MisuseWorld&) {
    parley_session* s = nullptr;
    return parley_session_create(nullptr, nullptr, &s);
  });
  add("parley_session_create", "out NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_create(w.engine(), nullptr, nullptr); });
  add("parley_session_create", "options NULL means defaults", PARLEY_OK, [](MisuseWorld& w) {
    parley_session* s = nullptr;
    const parley_status st = parley_session_create(w.engine(), nullptr, &s);
    parley_session_close(s);
    return st;
  });
  add("parley_session_create", "every string option NULL", PARLEY_OK, [](MisuseWorld& w) {
    parley_session_options o;
    parley_session_options_init(&o);
    o.id = o.system_prompt = o.chat_template = o.cache_scope = nullptr;
    parley_session* s = nullptr;
    const parley_status st = parley_session_create(w.engine(), &o, &s);
    parley_session_close(s);
    return st;
  });
  add("parley_session_open", "engine NULL", kInvalid, [](MisuseWorld&) {
    parley_session* s = nullptr;
    return parley_session_open(nullptr, "x", &s);
  });
  add("parley_session_open", "id NULL", kInvalid, [](MisuseWorld& w) {
    parley_session* s = nullptr;
    return parley_session_open(w.engine_with_store(), nullptr, &s);
  });
  add("parley_session_open", "out NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_open(w.engine_with_store(), "x", nullptr); });
  add("parley_session_fork", "session NULL", kInvalid, [](MisuseWorld&) {
    parley_session* s = nullptr;
    return parley_session_fork(nullptr, nullptr, &s);
  });
  add("parley_session_fork", "out NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_fork(w.session(), nullptr, nullptr); });
  add("parley_session_fork", "new_id NULL generates one", PARLEY_OK, [](MisuseWorld& w) {
    parley_session* f = nullptr;
    const parley_status st = parley_session_fork(w.session_with_turn(), nullptr, &f);
    parley_session_close(f);
    return st;
  });
  add("parley_session_suspend", "session NULL", kInvalid,
      [](MisuseWorld&) { return parley_session_suspend(nullptr); });
  add("parley_session_interrupt", "session NULL", kInvalid,
      [](MisuseWorld&) { return parley_session_interrupt(nullptr); });
  add("parley_session_rewind", "session NULL", kInvalid,
      [](MisuseWorld&) { return parley_session_rewind(nullptr, 0); });
  add("parley_session_set_system_prompt", "session NULL", kInvalid,
      [](MisuseWorld&) { return parley_session_set_system_prompt(nullptr, "a"); });
  add("parley_session_set_system_prompt", "system_prompt NULL removes it", PARLEY_OK,
      [](MisuseWorld& w) {
        return parley_session_set_system_prompt(w.session_with_turn(), nullptr);
      });
  add("parley_session_set_overflow", "session NULL", kInvalid,
      [](MisuseWorld&) { return parley_session_set_overflow(nullptr, PARLEY_OVERFLOW_ERROR); });
  quiet("parley_session_close", "NULL is a no-op", [](MisuseWorld&) {
    return returns([] { parley_session_close(nullptr); });
  });
  add("parley_session_delete", "engine NULL", kInvalid,
      [](MisuseWorld&) { return parley_session_delete(nullptr, "x"); });
  add("parley_session_delete", "id NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_delete(w.engine_with_store(), nullptr); });
  add("parley_session_get_info", "session NULL", kInvalid, [](MisuseWorld&) {
    parley_session_info i;
    i.struct_size = sizeof i;
    return parley_session_get_info(nullptr, &i);
  });
  add("parley_session_get_info", "out NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_get_info(w.session(), nullptr); });
  add("parley_session_get_turn", "session NULL", kInvalid, [](MisuseWorld&) {
    parley_turn t;
    t.struct_size = sizeof t;
    return parley_session_get_turn(nullptr, 0, &t);
  });
  add("parley_session_get_turn", "out NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_get_turn(w.session_with_turn(), 0, nullptr); });
  add("parley_session_export", "session NULL", kInvalid, [](MisuseWorld&) {
    size_t n = 0;
    return parley_session_export(nullptr, nullptr, 0, &n);
  });
  add("parley_session_export", "needed NULL", kInvalid, [](MisuseWorld& w) {
    char b[4];
    return parley_session_export(w.session_with_turn(), b, 4, nullptr);
  });
  add("parley_session_export", "buf NULL with cap > 0", kInvalid, [](MisuseWorld& w) {
    size_t n = 0;
    return parley_session_export(w.session_with_turn(), nullptr, 4, &n);
  });
  add("parley_session_export", "buf NULL with cap 0 asks the size", PARLEY_OK,
      [](MisuseWorld& w) {
        size_t n = 0;
        return parley_session_export(w.session_with_turn(), nullptr, 0, &n);
      });
  add("parley_session_import", "engine NULL", kInvalid, [](MisuseWorld&) {
    parley_session* s = nullptr;
    return parley_session_import(nullptr, kTextsOnlyConversation, nullptr, &s);
  });
  add("parley_session_import", "json NULL", kInvalid, [](MisuseWorld& w) {
    parley_session* s = nullptr;
    return parley_session_import(w.engine(), nullptr, nullptr, &s);
  });
  add("parley_session_import", "out NULL", kInvalid, [](MisuseWorld& w) {
    return parley_session_import(w.engine(), kTextsOnlyConversation, nullptr, nullptr);
  });
  add("parley_session_import", "new_id NULL keeps the conversation's (none: one is generated)",
      PARLEY_OK, [](MisuseWorld& w) {
        parley_session* s = nullptr;
        const parley_status st = parley_session_import(w.engine(), kTextsOnlyConversation,
                                                       nullptr, &s);
        parley_session_close(s);
        return st;
      });
  // The session's id buffers share one protocol (the buffer rule).
  using IdsGetter = parley_status (*)(parley_session*, int32_t*, size_t, size_t*);
  const std::pair<const char*, IdsGetter> ids_getters[] = {
      {"parley_session_get_tokens", parley_session_get_tokens},
      {"parley_session_get_end_ids", parley_session_get_end_ids}};
  for (const auto& [fn, get] : ids_getters) {
    add(fn, "session NULL", kInvalid, [get](MisuseWorld&) {
      size_t n = 0;
      return get(nullptr, nullptr, 0, &n);
    });
    add(fn, "count NULL", kInvalid, [get](MisuseWorld& w) {
      int32_t b[4];
      return get(w.session_with_turn(), b, 4, nullptr);
    });
    add(fn, "ids NULL with cap > 0", kInvalid, [get](MisuseWorld& w) {
      size_t n = 0;
      return get(w.session_with_turn(), nullptr, 4, &n);
    });
    add(fn, "ids NULL with cap 0 asks the size", PARLEY_OK, [get](MisuseWorld& w) {
      size_t n = 0;
      return get(w.session_with_turn(), nullptr, 0, &n);
    });
  }

  // Generation.
  add("parley_session_send", "session NULL", kInvalid,
      [](MisuseWorld&) { return send_text(nullptr, "hi"); });
  add("parley_session_send", "user_text NULL", kInvalid,
      [](MisuseWorld& w) { return send_text(w.session(), nullptr); });
  add("parley_session_send", "options, callback and stats NULL", PARLEY_OK, [](MisuseWorld& w) {
    return parley_session_send(w.session(), "a", nullptr, nullptr, nullptr, nullptr);
  });

  add("parley_session_continue", "session NULL", kInvalid, [](MisuseWorld&) {
    return parley_session_continue(nullptr, nullptr, nullptr, nullptr, nullptr);
  });
  add("parley_session_continue", "options, callback and stats NULL", PARLEY_OK,
      [](MisuseWorld& w) {
        return parley_session_continue(w.session_with_turn(), nullptr, nullptr, nullptr,
                                       nullptr);
      });

  add("parley_session_prepare", "session NULL", kInvalid, [](MisuseWorld&) {
    return parley_session_prepare(nullptr, nullptr);
  });
  add("parley_session_prepare", "stats NULL", PARLEY_OK,
      [](MisuseWorld& w) { return parley_session_prepare(w.session_with_turn(), nullptr); });

  add("parley_session_score_replies", "session NULL", kInvalid, [](MisuseWorld&) {
    const char* const replies[] = {"b"};
    double lp = 0;
    return parley_session_score_replies(nullptr, "a", replies, 1, 0, &lp, nullptr);
  });
  add("parley_session_score_replies", "user_text NULL, no message to go on from", kInvalid,
      [](MisuseWorld& w) {
        const char* const replies[] = {"b"};
        double lp = 0;
        return parley_session_score_replies(w.session(), nullptr, replies, 1, 0, &lp, nullptr);
      });
  add("parley_session_score_replies", "replies NULL", kInvalid, [](MisuseWorld& w) {
    double lp = 0;
    return parley_session_score_replies(w.session(), "a", nullptr, 1, 0, &lp, nullptr);
  });
  add("parley_session_score_replies", "a reply NULL", kInvalid, [](MisuseWorld& w) {
    const char* const replies[] = {"b", nullptr};
    double lp[2] = {};
    return parley_session_score_replies(w.session(), "a", replies, 2, 0, lp, nullptr);
  });
  add("parley_session_score_replies", "logprobs NULL", kInvalid, [](MisuseWorld& w) {
    const char* const replies[] = {"b"};
    return parley_session_score_replies(w.session(), "a", replies, 1, 0, nullptr, nullptr);
  });
  add("parley_session_score_replies", "n_tokens NULL", PARLEY_OK, [](MisuseWorld& w) {
    const char* const replies[] = {"b"};
    double lp = 0;
    return parley_session_score_replies(w.session_with_turn(), "a", replies, 1, 0, &lp,
                                        nullptr);
  });

  add("parley_session_count_tokens", "session NULL", kInvalid, [](MisuseWorld&) {
    uint32_t n = 0, left = 0;
    return parley_session_count_tokens(nullptr, "a", &n, &left);
  });
  add("parley_session_count_tokens", "user_text NULL", kInvalid, [](MisuseWorld& w) {
    uint32_t n = 0, left = 0;
    return parley_session_count_tokens(w.session(), nullptr, &n, &left);
  });
  add("parley_session_count_tokens", "both outputs NULL", PARLEY_OK, [](MisuseWorld& w) {
    return parley_session_count_tokens(w.session(), "a", nullptr, nullptr);
  });

  add("parley_session_add_exchange", "session NULL", kInvalid,
      [](MisuseWorld&) { return parley_session_add_exchange(nullptr, "a", "b"); });
  add("parley_session_add_exchange", "user_text NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_add_exchange(w.session(), nullptr, "b"); });
  add("parley_session_add_exchange", "reply_text NULL", kInvalid,
      [](MisuseWorld& w) { return parley_session_add_exchange(w.session(), "a", nullptr); });

  add("parley_check_json_schema", "schema NULL", kInvalid,
      [](MisuseWorld&) { return parley_check_json_schema(nullptr); });
  add("parley_check_json_schema", "schema \"\"", kInvalid,
      [](MisuseWorld&) { return parley_check_json_schema(""); });
  add("parley_check_json_schema", "schema not JSON", kInvalid,
      [](MisuseWorld&) { return parley_check_json_schema("{"); });
  add("parley_check_json_schema", "schema outside the subset", PARLEY_E_UNSUPPORTED,
      [](MisuseWorld&) { return parley_check_json_schema("{\"not\": {}}"); });
  add("parley_check_json_schema", "a schema it takes", PARLEY_OK, [](MisuseWorld&) {
    return parley_check_json_schema("{\"properties\": {\"a\": {\"enum\": [1, \"b\"]}}}");
  });

  // Tokens.
  add("parley_tokenize", "engine NULL", kInvalid, [](MisuseWorld&) {
    size_t n = 0;
    return parley_tokenize(nullptr, "a", 0, nullptr, 0, &n);
  });
  add("parley_tokenize", "text NULL", kInvalid, [](MisuseWorld& w) {
    size_t n = 0;
    return parley_tokenize(w.engine(), nullptr, 0, nullptr, 0, &n);
  });
  add("parley_tokenize", "n_needed NULL", kInvalid, [](MisuseWorld& w) {
    int32_t b[4];
    return parley_tokenize(w.engine(), "a", 0, b, 4, nullptr);
  });
  add("parley_tokenize", "ids NULL with cap > 0", kInvalid, [](MisuseWorld& w) {
    size_t n = 0;
    return parley_tokenize(w.engine(), "a", 0, nullptr, 4, &n);
  });
  add("parley_tokenize", "ids NULL with cap 0 asks the size", PARLEY_OK, [](MisuseWorld& w) {
    size_t n = 0;
    return parley_tokenize(w.engine(), "a", 1, nullptr, 0, &n);
  });
  add("parley_detokenize", "engine NULL", kInvalid, [](MisuseWorld&) {
    const int32_t one = 3;
    size_t n = 0;
    return parley_detokenize(nullptr, &one, 1, nullptr, 0, &n);
  });
  add("parley_detokenize", "ids NULL with n > 0", kInvalid, [](MisuseWorld& w) {
    size_t n = 0;
    return parley_detokenize(w.engine(), nullptr, 3, nullptr, 0, &n);
  });
  add("parley_detokenize", "ids NULL with n 0 is empty text", PARLEY_OK, [](MisuseWorld& w) {
    size_t n = 0;
    return parley_detokenize(w.engine(), nullptr, 0, nullptr, 0, &n);
  });
  add("parley_detokenize", "needed NULL", kInvalid, [](MisuseWorld& w) {
    const int32_t one = 3;
    char b[8];
    return parley_detokenize(w.engine(), &one, 1, b, sizeof b, nullptr);
  });
  add("parley_detokenize", "buf NULL with cap > 0", kInvalid, [](MisuseWorld& w) {
    const int32_t one = 3;
    size_t n = 0;
    return parley_detokenize(w.engine(), &one, 1, nullptr, 8, &n);
  });

  // Getters that never fail.
  quiet("parley_status_name", "every code has a name", [](MisuseWorld&) {
    for (parley_status s = 0; s <= PARLEY_E_MISUSE; ++s) {
      if (std::string(parley_status_name(s)).rfind("PARLEY_", 0) != 0) return kRowCheckFailed;
    }
    return PARLEY_OK;
  });
  quiet("parley_last_error", "never NULL", [](MisuseWorld&) {
    return parley_last_error() ? PARLEY_OK : kRowCheckFailed;
  });
  quiet("parley_version", "never NULL", [](MisuseWorld&) {
    return parley_version() && parley_version_number() == PARLEY_VERSION_NUMBER ? PARLEY_OK
                                                                                : kRowCheckFailed;
  });
  return r;
}

}  // namespace parley::test
