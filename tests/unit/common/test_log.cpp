// Log lines reach the sink; those of the library's own long-lived threads on a thread that
// ends with the call, so that no runtime adopts one of those threads for good.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/log.h"

namespace parley::log {
namespace {

struct Line {
  int level;
  std::string msg;
  std::thread::id on;
};

std::vector<Line> g_lines;

void record(int level, const char* msg, void*) {
  g_lines.push_back({level, msg, std::this_thread::get_id()});
}

// Each case logs from one thread of its own; returns that thread's id, alive while it logs.
template <class Body>
std::thread::id log_on_a_thread(Body body) {
  std::thread::id id;
  std::thread t([&] {
    id = std::this_thread::get_id();
    body();
  });
  t.join();
  return id;
}

}  // namespace

TEST_CASE("a line reaches the sink on the thread that logs it") {
  g_lines.clear();
  set_sink(&record, nullptr);
  const auto id = log_on_a_thread([] { warn_line("plain"); });
  set_sink(nullptr, nullptr);
  REQUIRE(g_lines.size() == 1);
  CHECK(g_lines[0].level == warn);
  CHECK(g_lines[0].msg == "plain");
  CHECK(g_lines[0].on == id);
}

TEST_CASE("a library thread's lines reach the sink in order, each before write returns, "
          "on another thread") {
  g_lines.clear();
  set_sink(&record, nullptr);
  size_t seen_after_first = 0;
  const auto id = log_on_a_thread([&] {
    mark_library_thread();
    warn_line("first");
    seen_after_first = g_lines.size();
    info_line("second");
  });
  set_sink(nullptr, nullptr);
  CHECK(seen_after_first == 1);
  REQUIRE(g_lines.size() == 2);
  CHECK(g_lines[0].msg == "first");
  CHECK(g_lines[1].msg == "second");
  CHECK(g_lines[1].level == info);
  // The marked thread was alive during both calls, so no other thread could have its id.
  CHECK(g_lines[0].on != id);
  CHECK(g_lines[1].on != id);
}

}  // namespace parley::log
