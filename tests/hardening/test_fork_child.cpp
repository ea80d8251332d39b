// fork() in a process with an open engine: the child may not use the parent's engine or
// sessions (PARLEY_E_MISUSE, saying why), closing them there returns at once and changes
// nothing, and an engine the child opens itself works; the parent goes on as before.
// Each child runs under alarm(), so a hang fails its test; it reports by its exit code.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "hardening_model.h"
#include "parley.h"
#include "support/sanitizer_build.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

// Far longer than any child needs; only a hang reaches it.
constexpr unsigned kChildAlarmSeconds = 60;
// Long enough never to spill during a test, yet the engine runs its idle-spill thread.
constexpr uint32_t kIdleSpillMs = 600000;

// Runs `child` in a forked child and returns its exit code; -1 when it did not exit (the alarm
// ended a hang, or it crashed). The child ends with _exit: no atexit handler or static
// destructor of the test process runs twice.
int run_in_child(const std::function<int()>& child) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(kChildAlarmSeconds);
    _exit(child());
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// In the child: whether a call on an inherited handle was refused as it should be.
bool refused_as_inherited(parley_status st) {
  if (st != PARLEY_E_MISUSE) {
    std::fprintf(stderr, "child: %s, not MISUSE: %s\n", parley_status_name(st),
                 parley_last_error());
    return false;
  }
  const std::string message = parley_last_error();
  const std::string opened_by = "was opened by process " + std::to_string(getppid());
  if (message.find(opened_by) == std::string::npos ||
      message.find("after fork() a child opens its own engine") == std::string::npos) {
    std::fprintf(stderr, "child: unexpected message: %s\n", message.c_str());
    return false;
  }
  return true;
}

uint32_t turns_of(parley_session* s) {
  parley_session_info info;
  info.struct_size = sizeof info;
  return parley_session_get_info(s, &info) == PARLEY_OK ? info.n_turns : 0;
}

// The child's own engine on the parent's store reads what the parent stored of "conv".
bool reads_stored_conversation(const std::string& model, const std::string& db, uint32_t n_turns) {
  const auto o = engine_options(model, db);
  parley_engine* own = nullptr;
  if (parley_engine_open(&o, &own) != PARLEY_OK) return false;
  parley_session* reopened = nullptr;
  const bool read =
      parley_session_open(own, "conv", &reopened) == PARLEY_OK && turns_of(reopened) == n_turns;
  if (!read) std::fprintf(stderr, "child: reopening: %s\n", parley_last_error());
  parley_session_close(reopened);
  parley_engine_close(own);
  return read;
}

std::atomic<int> g_changed_elsewhere{0};

void count_changed_elsewhere(int, const char* msg, void*) {
  if (std::strstr(msg, "changed in the store by another engine")) ++g_changed_elsewhere;
}

}  // namespace

TEST_CASE("a forked child refuses the parent's engine, closes it at once, and opens its own") {
  TempDir dir;
  const std::string db = (dir / "forked.db").string();
  const std::string& model = hardening_model();
  const auto o = engine_options(model, db, 0, kIdleSpillMs, 2);
  parley_engine* e = nullptr;
  REQUIRE(parley_engine_open(&o, &e) == PARLEY_OK);
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = "conv";
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
  const auto g = greedy_options(4);
  REQUIRE(parley_session_send(s, "Hello", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  const uint32_t turns_at_fork = turns_of(s);
  REQUIRE(turns_at_fork == 2);

  // A child that only closes what it inherited, as a binding's finalizers do at its exit.
  const int closing_child = run_in_child([&] {
    parley_session_close(s);
    parley_engine_close(e);
    parley_session_close(s);  // closing again stays harmless
    parley_engine_close(e);
    // ThreadSanitizer ends a child of a threaded process as soon as it starts a thread (its
    // die_after_fork): under it, the child skips opening an engine of its own.
    if (kThreadSanitizerBuild) return 0;
    return reads_stored_conversation(model, db, turns_at_fork) ? 0 : 1;
  });
  CHECK(closing_child == 0);  // -1: it hung (or crashed); 1: its own engine failed

  const int using_child = run_in_child([&] {
    int failed = 0;  // a bit for each call not refused; every call runs
    if (!refused_as_inherited(parley_session_send(s, "Hi", &g, nullptr, nullptr, nullptr))) {
      failed |= 1;
    }
    parley_session* other = nullptr;
    if (!refused_as_inherited(parley_session_create(e, nullptr, &other))) failed |= 2;
    size_t needed = 0;
    if (!refused_as_inherited(parley_session_export(s, nullptr, 0, &needed))) failed |= 4;
    parley_engine_stats stats;
    stats.struct_size = sizeof stats;
    if (!refused_as_inherited(parley_engine_get_stats(e, &stats))) failed |= 8;
    return failed;
  });
  CHECK(using_child == 0);  // -1: it hung (or crashed)

  // The children wrote nothing: the KV was never spilled, and the parent's next commit
  // finds the conversation as it left it.
  parley_stored_session_info stored;
  stored.struct_size = sizeof stored;
  REQUIRE(parley_store_get_session_info(e, "conv", &stored) == PARLEY_OK);
  CHECK(stored.kv_bytes_stored == 0);
  g_changed_elsewhere = 0;
  parley_set_log_callback(count_changed_elsewhere, nullptr);
  CHECK(parley_session_send(s, "Again", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  parley_set_log_callback(nullptr, nullptr);
  CHECK(g_changed_elsewhere == 0);
  REQUIRE(parley_store_get_session_info(e, "conv", &stored) == PARLEY_OK);
  CHECK(stored.n_turns == turns_at_fork + 2);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a child forked while a parent thread is mid-send closes the inherited handles") {
  if (kAddressSanitizerBuild) {
    // GCC 12's AddressSanitizer does not lock its allocator across fork() (its runtime has no
    // fork interceptor): a child forked while another thread allocates may hang in malloc.
    MESSAGE("skipped under AddressSanitizer: its allocator is not fork-safe while a thread "
            "allocates");
    return;
  }
  TempDir dir;
  const std::string db = (dir / "mid_send.db").string();
  const auto o = engine_options(hardening_model(), db, 0, kIdleSpillMs, 2);
  parley_engine* e = nullptr;
  REQUIRE(parley_engine_open(&o, &e) == PARLEY_OK);
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);

  // Runs until interrupted (or the context is full); the first piece says it is under way.
  std::atomic<bool> streaming{false};
  parley_status send_status = PARLEY_OK;
  std::thread sender([&] {
    const auto endless = greedy_options(0);
    send_status = parley_session_send(
        s, "Once upon a time", &endless,
        [](const char*, size_t, void* user) {
          static_cast<std::atomic<bool>*>(user)->store(true);
          return 0;
        },
        &streaming, nullptr);
  });
  while (!streaming) std::this_thread::yield();

  const int child_code = run_in_child([&] {
    int failed = 0;  // a bit for each step that went wrong; every step runs
    const auto g = greedy_options(2);
    if (!refused_as_inherited(parley_session_send(s, "Hi", &g, nullptr, nullptr, nullptr))) {
      failed |= 1;
    }
    parley_session* other = nullptr;
    if (!refused_as_inherited(parley_session_create(e, nullptr, &other))) failed |= 2;
    parley_session_close(s);
    parley_engine_close(e);
    return failed;
  });
  CHECK(child_code == 0);  // -1: it hung (or crashed); else the bits of the failed steps

  CHECK(parley_session_interrupt(s) == PARLEY_OK);
  sender.join();
  CHECK((send_status == PARLEY_E_CANCELLED || send_status == PARLEY_E_CONTEXT_FULL));
  parley_session_close(s);
  parley_engine_close(e);
}
