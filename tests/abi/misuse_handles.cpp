// Rows: handles that are closed, closed twice, of the other kind, or never were handles.
// Every entry point looks a handle up in the registry of live ones before touching it, so
// each of these is PARLEY_E_MISUSE (close: a no-op) and nothing is dereferenced.
#include <cstdint>

#include "misuse_matrix.h"

namespace parley::test {
namespace {

constexpr parley_status kMisuse = PARLEY_E_MISUSE;

// A handle value that was never returned by the library.
parley_session* forged_session() { return reinterpret_cast<parley_session*>(uintptr_t(0x1000)); }
parley_engine* forged_engine() { return reinterpret_cast<parley_engine*>(uintptr_t(0x2000)); }

// Every session entry point with `s` and otherwise valid arguments.
std::vector<std::pair<const char*, parley_status (*)(parley_session*)>> session_calls() {
  return {
      {"parley_session_send", [](parley_session* s) { return send_text(s, "a"); }},
      {"parley_session_add_exchange",
       [](parley_session* s) { return parley_session_add_exchange(s, "a", "b"); }},
      {"parley_session_count_tokens",
       [](parley_session* s) { return parley_session_count_tokens(s, "a", nullptr, nullptr); }},
      {"parley_session_score_replies",
       [](parley_session* s) {
         const char* const replies[] = {"b"};
         double lp = 0;
         return parley_session_score_replies(s, "a", replies, 1, 0, &lp, nullptr);
       }},
      {"parley_session_prepare",
       [](parley_session* s) { return parley_session_prepare(s, nullptr); }},
      {"parley_session_continue",
       [](parley_session* s) {
         const parley_generate_options g = quick_generate();
         return parley_session_continue(s, &g, nullptr, nullptr, nullptr);
       }},
      {"parley_session_fork",
       [](parley_session* s) {
         parley_session* f = nullptr;
         const parley_status st = parley_session_fork(s, nullptr, &f);
         parley_session_close(f);
         return st;
       }},
      {"parley_session_suspend", [](parley_session* s) { return parley_session_suspend(s); }},
      {"parley_session_interrupt", [](parley_session* s) { return parley_session_interrupt(s); }},
      {"parley_session_rewind", [](parley_session* s) { return parley_session_rewind(s, 0); }},
      {"parley_session_set_system_prompt",
       [](parley_session* s) { return parley_session_set_system_prompt(s, "a"); }},
      {"parley_session_set_overflow",
       [](parley_session* s) { return parley_session_set_overflow(s, PARLEY_OVERFLOW_ERROR); }},
      {"parley_session_get_info",
       [](parley_session* s) {
         parley_session_info i;
         i.struct_size = sizeof i;
         return parley_session_get_info(s, &i);
       }},
      {"parley_session_get_turn",
       [](parley_session* s) {
         parley_turn t;
         t.struct_size = sizeof t;
         return parley_session_get_turn(s, 0, &t);
       }},
      {"parley_session_get_tokens",
       [](parley_session* s) {
         size_t n = 0;
         return parley_session_get_tokens(s, nullptr, 0, &n);
       }},
      {"parley_session_get_end_ids",
       [](parley_session* s) {
         size_t n = 0;
         return parley_session_get_end_ids(s, nullptr, 0, &n);
       }},
      {"parley_session_export",
       [](parley_session* s) {
         size_t n = 0;
         return parley_session_export(s, nullptr, 0, &n);
       }},
  };
}

// Every engine entry point with `e` and otherwise valid arguments.
std::vector<std::pair<const char*, parley_status (*)(parley_engine*)>> engine_calls() {
  return {
      {"parley_engine_get_stats",
       [](parley_engine* e) {
         parley_engine_stats s;
         s.struct_size = sizeof s;
         return parley_engine_get_stats(e, &s);
       }},
      {"parley_engine_get_model_info",
       [](parley_engine* e) {
         parley_model_info m;
         m.struct_size = sizeof m;
         return parley_engine_get_model_info(e, &m);
       }},
      {"parley_session_create",
       [](parley_engine* e) {
         parley_session* s = nullptr;
         const parley_status st = parley_session_create(e, nullptr, &s);
         parley_session_close(s);
         return st;
       }},
      {"parley_session_open",
       [](parley_engine* e) {
         parley_session* s = nullptr;
         return parley_session_open(e, "x", &s);
       }},
      {"parley_session_delete", [](parley_engine* e) { return parley_session_delete(e, "x"); }},
      {"parley_session_import",
       [](parley_engine* e) {
         parley_session* s = nullptr;
         return parley_session_import(e, kTextsOnlyConversation, nullptr, &s);
       }},
      {"parley_store_get_session_info",
       [](parley_engine* e) {
         parley_stored_session_info info{};
         info.struct_size = sizeof info;
         return parley_store_get_session_info(e, "x", &info);
       }},
      {"parley_store_list_sessions",
       [](parley_engine* e) {
         size_t n = 0;
         return parley_store_list_sessions(e, nullptr, 0, &n);
       }},
      {"parley_tokenize",
       [](parley_engine* e) {
         size_t n = 0;
         return parley_tokenize(e, "a", 1, nullptr, 0, &n);
       }},
      {"parley_detokenize",
       [](parley_engine* e) {
         const int32_t id = 3;
         size_t n = 0;
         return parley_detokenize(e, &id, 1, nullptr, 0, &n);
       }},
  };
}

// A session handle closed just before use (nothing allocated in between could reuse it).
parley_session* closed_session(MisuseWorld& w) {
  parley_session_options o;
  parley_session_options_init(&o);
  parley_session* s = nullptr;
  parley_session_create(w.engine(), &o, &s);
  parley_session_close(s);
  return s;
}

parley_engine* closed_engine(MisuseWorld& w) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = w.model().c_str();
  o.n_threads = 1;
  parley_engine* e = nullptr;
  parley_engine_open(&o, &e);
  parley_engine_close(e);
  return e;
}

}  // namespace

MisuseRows handle_rows() {
  MisuseRows r;
  for (const auto& [fn, call] : session_calls()) {
    auto c = call;
    r.push_back({fn, "session used after close", kMisuse,
                 [c](MisuseWorld& w) { return c(closed_session(w)); }});
    r.push_back({fn, "session closed twice, then used", kMisuse, [c](MisuseWorld& w) {
                   parley_session* s = closed_session(w);
                   parley_session_close(s);  // documented no-op
                   return c(s);
                 }});
    r.push_back({fn, "an engine handle passed as a session", kMisuse, [c](MisuseWorld& w) {
                   return c(reinterpret_cast<parley_session*>(w.engine()));
                 }});
    r.push_back({fn, "a pointer that never was a handle", kMisuse,
                 [c](MisuseWorld&) { return c(forged_session()); }});
  }
  for (const auto& [fn, call] : engine_calls()) {
    auto c = call;
    r.push_back({fn, "engine used after close", kMisuse,
                 [c](MisuseWorld& w) { return c(closed_engine(w)); }});
    r.push_back({fn, "a session handle passed as an engine", kMisuse, [c](MisuseWorld& w) {
                   return c(reinterpret_cast<parley_engine*>(w.session()));
                 }});
    r.push_back({fn, "a pointer that never was a handle", kMisuse,
                 [c](MisuseWorld&) { return c(forged_engine()); }});
  }
  r.push_back({"parley_engine_close", "closed twice: the second is a no-op", PARLEY_OK,
               [](MisuseWorld& w) {
                 parley_engine_close(closed_engine(w));
                 return PARLEY_OK;
               },
               false});
  r.push_back({"parley_engine_close", "a forged handle is ignored", PARLEY_OK,
               [](MisuseWorld&) {
                 parley_engine_close(forged_engine());
                 return PARLEY_OK;
               },
               false});
  r.push_back({"parley_session_close", "a forged handle is ignored", PARLEY_OK,
               [](MisuseWorld&) {
                 parley_session_close(forged_session());
                 return PARLEY_OK;
               },
               false});
  r.push_back({"parley_session_send", "the engine closed first: its sessions still work",
               PARLEY_OK, [](MisuseWorld& w) {
                 parley_engine_options o;
                 parley_engine_options_init(&o);
                 o.model_path = w.model().c_str();
                 o.n_threads = 1;
                 parley_engine* e = nullptr;
                 parley_engine_open(&o, &e);
                 parley_session* s = nullptr;
                 parley_session_create(e, nullptr, &s);
                 parley_engine_close(e);
                 const parley_status st = send_text(s, "a b");
                 parley_session_close(s);  // frees the engine too
                 return st;
               }});
  return r;
}

}  // namespace parley::test
