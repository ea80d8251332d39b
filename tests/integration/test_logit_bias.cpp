// Logit biases through the C ABI on stories260K: the reference logits say which token a ban or
// a bias must bring, a banned end token keeps a story going, and bad entries are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "golden.h"
#include "model_runner.h"
#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

constexpr float kBan = -std::numeric_limits<float>::infinity();

// The reply's ids after one greedy send of `prompt` with the raw template.
std::vector<int32_t> greedy_reply(parley_engine* e, const char* prompt, uint32_t max_tokens,
                                  const std::vector<parley_logit_bias>& biases,
                                  parley_turn_stats* stats = nullptr, bool ignore_eos = true) {
  parley_session* s = create_raw_session(e, nullptr);
  parley_generate_options g = greedy_options(max_tokens);
  g.ignore_eos = ignore_eos;
  g.logit_bias = biases.data();
  g.n_logit_bias = uint32_t(biases.size());
  REQUIRE_MESSAGE(parley_session_send(s, prompt, &g, nullptr, nullptr, stats) == PARLEY_OK,
                  parley_last_error());
  parley_turn t{};
  t.struct_size = sizeof t;
  REQUIRE(parley_session_get_turn(s, 1, &t) == PARLEY_OK);
  const std::vector<int32_t> ids = session_tokens(s);
  parley_session_close(s);
  return std::vector<int32_t>(ids.end() - t.n_tokens, ids.end());
}

// Token ids of one logits row, best first.
std::vector<int32_t> ranked(const float* row, size_t n_vocab) {
  std::vector<int32_t> ids(n_vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  return ids;
}

}  // namespace

TEST_CASE("a banned token gives way to the reference's next best; a bias can outrank it") {
  PARLEY_SHARED_OR_SKIP(golden_dir, "golden");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const LogitsGolden golden = read_logits_golden(golden_dir, "once_upon");
  const size_t last_prompt_row = 4;  // BOS + "Once upon a time": 5 ids
  const float* row = golden.logits.data() + last_prompt_row * golden.n_vocab;
  const std::vector<int32_t> order = ranked(row, golden.n_vocab);
  // Margins well above the engine's difference from the reference, so the order is the same.
  REQUIRE(row[order[0]] - row[order[1]] > 0.05f);
  REQUIRE(row[order[1]] - row[order[2]] > 0.05f);
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);

  CHECK(greedy_reply(e, "Once upon a time", 1, {}) == std::vector<int32_t>{order[0]});
  CHECK(greedy_reply(e, "Once upon a time", 1, {{order[0], kBan}}) ==
        std::vector<int32_t>{order[1]});
  CHECK(greedy_reply(e, "Once upon a time", 1, {{order[0], kBan}, {order[1], kBan}}) ==
        std::vector<int32_t>{order[2]});
  // A bias just past the gap lifts the third above the first; just short of it does not.
  const float gap = row[order[0]] - row[order[2]];
  CHECK(greedy_reply(e, "Once upon a time", 1, {{order[2], gap + 0.05f}}) ==
        std::vector<int32_t>{order[2]});
  CHECK(greedy_reply(e, "Once upon a time", 1, {{order[2], gap - 0.05f}}) ==
        std::vector<int32_t>{order[0]});
  parley_engine_close(e);
}

TEST_CASE("a banned token never appears: every reply token is the best of the rest") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_F32);
  const std::vector<int32_t> plain = greedy_reply(e, "Once upon a time", 40, {});
  // Ban the reply's most frequent token.
  const auto count = [&](int32_t id) { return std::count(plain.begin(), plain.end(), id); };
  int32_t banned = plain.front();
  for (int32_t id : plain) {
    if (count(id) > count(banned)) banned = id;
  }
  const std::vector<int32_t> reply = greedy_reply(e, "Once upon a time", 40, {{banned, kBan}});
  CHECK(std::find(reply.begin(), reply.end(), banned) == reply.end());
  CHECK(reply != plain);

  // Against the model's own all-at-once logits: each reply token is the argmax once the banned
  // one is out.
  std::vector<int32_t> ids = {1, 403, 407, 261, 378};  // BOS + "Once upon a time"
  const size_t prompt = ids.size();
  ids.insert(ids.end(), reply.begin(), reply.end());
  const auto logits = ModelRunner(gguf.string()).logits(ids, kv::KvType::f32);
  const size_t vocab = logits.size() / ids.size();
  for (size_t p = prompt; p < ids.size(); ++p) {
    std::vector<float> row(logits.begin() + long((p - 1) * vocab),
                           logits.begin() + long(p * vocab));
    row[size_t(banned)] = kBan;
    CHECK(ids[p] == int32_t(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  parley_engine_close(e);
}

TEST_CASE("banning the end tokens keeps a story going to max_tokens") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_turn_stats stats{};
  stats.struct_size = sizeof stats;
  const auto ended = greedy_reply(e, "Once upon a time", 400, {}, &stats, false);
  REQUIRE(stats.stop_reason == PARLEY_STOP_END_TOKEN);  // a story ends with BOS here
  const auto going = greedy_reply(e, "Once upon a time", 400, {{1, kBan}, {2, kBan}}, &stats,
                                  false);
  CHECK(stats.stop_reason == PARLEY_STOP_MAX_TOKENS);
  CHECK(going.size() == 400);
  CHECK(std::find(going.begin(), going.end(), 1) == going.end());
  CHECK(std::find(going.begin(), going.end(), 2) == going.end());
  // Up to where the story ended, the same story.
  CHECK(std::equal(ended.begin(), ended.end() - 1, going.begin()));
  parley_engine_close(e);
}

TEST_CASE("logit_bias: every token banned, or a token past the vocabulary, is refused") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  std::vector<parley_logit_bias> all;
  for (uint32_t id = 0; id < info.n_vocab; ++id) all.push_back({int32_t(id), kBan});
  parley_session* s = create_raw_session(e, nullptr);
  parley_generate_options g = greedy_options(4);
  g.logit_bias = all.data();
  g.n_logit_bias = uint32_t(all.size());
  CHECK(parley_session_send(s, "Once", &g, nullptr, nullptr, nullptr) ==
        PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::string(parley_last_error()).find("bans every token") != std::string::npos);
  all.pop_back();  // all but the last: the reply is that one alone
  g.n_logit_bias = uint32_t(all.size());
  REQUIRE(parley_session_send(s, "Once", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  const auto ids = session_tokens(s);
  CHECK(std::all_of(ids.end() - 4, ids.end(),
                    [&](int32_t id) { return id == int32_t(info.n_vocab - 1); }));

  const parley_logit_bias past = {int32_t(info.n_vocab), 1.0f};
  g.logit_bias = &past;
  g.n_logit_bias = 1;
  CHECK(parley_session_send(s, "Once", &g, nullptr, nullptr, nullptr) ==
        PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::string(parley_last_error()).find("below the vocabulary's") != std::string::npos);
  CHECK(session_tokens(s) == ids);  // refused turns change nothing
  parley_session_close(s);
  parley_engine_close(e);
}
