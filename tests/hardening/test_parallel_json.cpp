// Replies held to JSON from several threads at once, beside plain ones, on one engine: the
// first JSON replies of the engine all start together (its vocabulary walk is made once and
// shared), the sessions share their decode steps, and each reply is, token for token, the one
// its session gives alone.
#include <doctest/doctest.h>

#include <barrier>
#include <string>
#include <thread>
#include <vector>

#include "api_helpers.h"
#include "parley.h"
#include "support/shared_assets.h"
#include "text/json_prefix.h"

using namespace parley::test;

namespace {

constexpr int kSessions = 6;
constexpr uint32_t kReplyTokens = 24;

// Session i's reply options: JSON for most, plain text for every third.
parley_generate_options options_of(int i) {
  parley_generate_options g = greedy_options(kReplyTokens);
  if (i % 3 != 2) {
    g.format = PARLEY_FORMAT_JSON;
    g.reply_prefix = i % 2 ? "{\"name\": \"" : nullptr;
  }
  return g;
}

std::string prompt_of(int i) { return "Once upon a time there was a " + std::to_string(i); }

// A new raw session's greedy reply to prompt_of(i): its token ids, or empty with a failure.
std::vector<int32_t> reply_ids(parley_engine* e, int i, std::string& failure) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.chat_template = "raw";
  parley_session* s = nullptr;
  if (parley_session_create(e, &so, &s) != PARLEY_OK) {
    failure = parley_last_error();
    return {};
  }
  const parley_generate_options g = options_of(i);
  std::vector<int32_t> ids;
  Transcript t;
  if (parley_session_send(s, prompt_of(i).c_str(), &g, nullptr, nullptr, nullptr) != PARLEY_OK) {
    failure = parley_last_error();
  } else if (read_transcript(s, t) != PARLEY_OK) {
    failure = parley_last_error();
  } else if (g.format == PARLEY_FORMAT_JSON &&
             parley::text::JsonPrefix::taken_length(t.texts.back()) != t.texts.back().size()) {
    failure = "session " + std::to_string(i) + "'s reply is not an object's start: " +
              t.texts.back();
  } else {
    ids = t.tokens;
  }
  parley_session_close(s);
  return ids;
}

}  // namespace

TEST_CASE("JSON and plain replies from six threads at once are each the reply given alone") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string model = gguf.string();
  // What each session replies alone, on an engine of its own.
  std::vector<std::vector<int32_t>> alone(kSessions);
  {
    const parley_engine_options eo = engine_options(model, "");
    parley_engine* e = nullptr;
    REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, std::string(parley_last_error()));
    for (int i = 0; i < kSessions; ++i) {
      std::string failure;
      alone[size_t(i)] = reply_ids(e, i, failure);
      REQUIRE_MESSAGE(failure.empty(), failure);
    }
    parley_engine_close(e);
  }
  // All at once on a new engine, whose first JSON replies start together.
  const parley_engine_options eo = engine_options(model, "");
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, std::string(parley_last_error()));
  std::vector<std::vector<int32_t>> together(kSessions);
  std::vector<std::string> failures(kSessions);
  std::barrier start(kSessions);
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      together[size_t(i)] = reply_ids(e, i, failures[size_t(i)]);
    });
  }
  for (std::thread& t : threads) t.join();
  parley_engine_close(e);
  for (int i = 0; i < kSessions; ++i) {
    CAPTURE(i);
    CHECK_MESSAGE(failures[size_t(i)].empty(), failures[size_t(i)]);
    CHECK(together[size_t(i)] == alone[size_t(i)]);
  }
}
