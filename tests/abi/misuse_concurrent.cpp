// Rows: calls on a session while a send runs on it, from the send's own callback (re-entry)
// and from a second thread. The session is used by one call at a time, so each is BUSY and
// leaves the running send alone; only parley_session_interrupt() and parley_session_close()
// may come at any time (the send then stops with CANCELLED; after a close, the session is
// freed when it returns). Engine calls, and calls on other sessions, are allowed from a
// callback.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "misuse_matrix.h"

namespace parley::test {
namespace {

using Inner = std::function<parley_status(MisuseWorld&, parley_session*)>;

struct InnerCall {
  const char* function;
  Inner call;
};

std::vector<InnerCall> session_calls() {
  return {
      {"parley_session_send", [](MisuseWorld&, parley_session* s) { return send_text(s, "b"); }},
      {"parley_session_add_exchange",
       [](MisuseWorld&, parley_session* s) { return parley_session_add_exchange(s, "b", "c"); }},
      {"parley_session_count_tokens",
       [](MisuseWorld&, parley_session* s) {
         return parley_session_count_tokens(s, "b", nullptr, nullptr);
       }},
      {"parley_session_score_replies",
       [](MisuseWorld&, parley_session* s) {
         const char* const replies[] = {"b"};
         double lp = 0;
         return parley_session_score_replies(s, "a", replies, 1, 0, &lp, nullptr);
       }},
      {"parley_session_prepare",
       [](MisuseWorld&, parley_session* s) { return parley_session_prepare(s, nullptr); }},
      {"parley_session_continue",
       [](MisuseWorld&, parley_session* s) {
         const parley_generate_options g = quick_generate();
         return parley_session_continue(s, &g, nullptr, nullptr, nullptr);
       }},
      {"parley_session_fork",
       [](MisuseWorld&, parley_session* s) {
         parley_session* f = nullptr;
         return parley_session_fork(s, nullptr, &f);
       }},
      {"parley_session_suspend",
       [](MisuseWorld&, parley_session* s) { return parley_session_suspend(s); }},
      {"parley_session_rewind",
       [](MisuseWorld&, parley_session* s) { return parley_session_rewind(s, 1); }},
      {"parley_session_set_system_prompt",
       [](MisuseWorld&, parley_session* s) { return parley_session_set_system_prompt(s, "b"); }},
      {"parley_session_set_overflow",
       [](MisuseWorld&, parley_session* s) {
         return parley_session_set_overflow(s, PARLEY_OVERFLOW_DROP_OLDEST);
       }},
      {"parley_session_get_info",
       [](MisuseWorld&, parley_session* s) {
         parley_session_info i;
         i.struct_size = sizeof i;
         return parley_session_get_info(s, &i);
       }},
      {"parley_session_get_turn",
       [](MisuseWorld&, parley_session* s) {
         parley_turn t;
         t.struct_size = sizeof t;
         return parley_session_get_turn(s, 0, &t);
       }},
      {"parley_session_get_tokens", [](MisuseWorld&, parley_session* s) {
         size_t n = 0;
         return parley_session_get_tokens(s, nullptr, 0, &n);
       }},
      {"parley_session_get_end_ids", [](MisuseWorld&, parley_session* s) {
         size_t n = 0;
         return parley_session_get_end_ids(s, nullptr, 0, &n);
       }},
      {"parley_session_export", [](MisuseWorld&, parley_session* s) {
         size_t n = 0;
         return parley_session_export(s, nullptr, 0, &n);
       }},
  };
}

// What a call made while the send ran saw, and how the send ended.
struct During {
  parley_status inner = kRowCheckFailed;
  std::string inner_message;
  parley_status outer = kRowCheckFailed;
  bool callback_ran = false;
};

// Runs `inner` on `s` from inside the send's first callback.
During from_callback(MisuseWorld& w, parley_session* s, const Inner& inner) {
  struct Ctx {
    MisuseWorld* w;
    parley_session* s;
    const Inner* inner;
    During d;
  } ctx{&w, s, &inner, {}};
  const parley_text_fn on_text = [](const char*, size_t, void* user) {
    auto* c = static_cast<Ctx*>(user);
    if (!c->d.callback_ran) {
      c->d.callback_ran = true;
      c->d.inner = (*c->inner)(*c->w, c->s);
      c->d.inner_message = parley_last_error();
    }
    return 0;
  };
  const parley_generate_options g = quick_generate();
  ctx.d.outer = parley_session_send(s, "a", &g, on_text, &ctx, nullptr);
  return ctx.d;
}

// Runs `inner` on `s` from a second thread while the send waits in its first callback.
During from_thread(MisuseWorld& w, parley_session* s, const Inner& inner) {
  struct Ctx {
    std::mutex m;
    std::condition_variable cv;
    bool in_callback = false, inner_done = false;
    During d;
  } ctx;
  const parley_text_fn on_text = [](const char*, size_t, void* user) {
    auto* c = static_cast<Ctx*>(user);
    std::unique_lock lock(c->m);
    if (!c->d.callback_ran) {
      c->d.callback_ran = true;
      c->in_callback = true;
      c->cv.notify_all();
      c->cv.wait_for(lock, std::chrono::seconds(20), [c] { return c->inner_done; });
    }
    return 0;
  };
  std::thread sender([&] {
    const parley_generate_options g = quick_generate();
    ctx.d.outer = parley_session_send(s, "a", &g, on_text, &ctx, nullptr);
    std::lock_guard lock(ctx.m);
    ctx.in_callback = true;  // a send that never called back must not leave us waiting
    ctx.cv.notify_all();
  });
  {
    std::unique_lock lock(ctx.m);
    ctx.cv.wait(lock, [&] { return ctx.in_callback; });
  }
  const parley_status st = inner(w, s);
  const std::string message = parley_last_error();  // this thread's own
  {
    std::lock_guard lock(ctx.m);
    ctx.d.inner = st;
    ctx.d.inner_message = message;
    ctx.inner_done = true;
    ctx.cv.notify_all();
  }
  sender.join();
  return ctx.d;
}

// A row: `inner` during a send must give `inner_expected`, the send `outer_expected`.
MisuseRow during_send(const char* function, const std::string& what, bool second_thread,
                      Inner inner, parley_status inner_expected,
                      parley_status outer_expected = PARLEY_OK, bool own_session = true) {
  return {function, what, inner_expected,
          [=](MisuseWorld& w) {
            parley_session* s = w.session_with_turn();
            if (!own_session) s = w.session();  // closed by the row itself
            const During d = second_thread ? from_thread(w, s, inner) : from_callback(w, s, inner);
            if (!d.callback_ran || d.outer != outer_expected) return kRowCheckFailed;
            if (d.inner != PARLEY_OK && d.inner_message.find(function) == std::string::npos) {
              return kRowCheckFailed;  // the caller's own thread got no message
            }
            return d.inner;
          },
          !second_thread};
}

MisuseRows rows(bool second_thread) {
  MisuseRows r;
  const char* where = second_thread ? "from a second thread" : "from its own callback";
  for (const InnerCall& c : session_calls()) {
    r.push_back(during_send(c.function, where, second_thread, c.call, PARLEY_E_BUSY));
  }
  r.push_back(during_send("parley_session_interrupt", std::string(where) + ": the send stops",
                          second_thread,
                          [](MisuseWorld&, parley_session* s) { return parley_session_interrupt(s); },
                          PARLEY_OK, PARLEY_E_CANCELLED));
  r.push_back(during_send("parley_tokenize", std::string(where) + ": the engine is free",
                          second_thread,
                          [](MisuseWorld& w, parley_session*) {
                            size_t n = 0;
                            return parley_tokenize(w.engine(), "a b", 1, nullptr, 0, &n);
                          },
                          PARLEY_OK));
  r.push_back(during_send("parley_engine_get_stats", std::string(where) + ": the engine is free",
                          second_thread,
                          [](MisuseWorld& w, parley_session*) {
                            parley_engine_stats st;
                            st.struct_size = sizeof st;
                            return parley_engine_get_stats(w.engine(), &st);
                          },
                          PARLEY_OK));
  r.push_back(during_send("parley_session_send", std::string(where) + ": another session is free",
                          second_thread,
                          [](MisuseWorld& w, parley_session*) { return send_text(w.session(), "c"); },
                          PARLEY_OK));
  r.push_back(during_send("parley_session_close",
                          std::string(where) + ": the send stops, then the session is freed",
                          second_thread,
                          [](MisuseWorld&, parley_session* s) {
                            parley_session_close(s);
                            return PARLEY_OK;
                          },
                          PARLEY_OK, PARLEY_E_CANCELLED, false));
  return r;
}

}  // namespace

MisuseRows reentry_rows() { return rows(false); }
MisuseRows two_thread_rows() { return rows(true); }

}  // namespace parley::test
