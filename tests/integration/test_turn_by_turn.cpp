// A conversation computed turn by turn (each send prefills only what is new, the KV stays
// between turns) equals the same tokens computed all at once: with F32 KV the logits agree
// within 1e-4; with INT8 KV every greedy choice is the same (K/V are quantized into the cache
// before attention reads them, so chunking changes nothing).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "model_runner.h"
#include "session_fixture.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

struct Turn {
  const char* text;
  uint32_t n;
};

// Runs the turns in one session; checks every reply token against the all-at-once logits.
void check_turns_equal_all_at_once(const std::string& model, kv::KvType kv_type,
                                   const std::vector<Turn>& turns) {
  CAPTURE(model);
  CAPTURE(std::string(kv::kv_type_name(kv_type)));
  auto engine = open_engine(model, kv_type);
  engine::Session session(engine, session_options());
  std::vector<size_t> reply_positions;
  for (const Turn& t : turns) {
    const auto stats = greedy_turn(session, t.text, t.n);
    const size_t end = session.tokens().size();
    for (size_t p = end - stats.generated_tokens; p < end; ++p) reply_positions.push_back(p);
    // Only the new turn (and the last reply's pending token) was computed.
    CHECK(stats.computed_tokens == stats.prompt_tokens + (reply_positions.size() > t.n ? 1 : 0));
  }
  const std::vector<int32_t> all = session.tokens();
  const size_t vocab = size_t(engine->config().n_vocab);
  const auto logits = ModelRunner(model).logits(all, kv_type);

  for (size_t p : reply_positions) CHECK(is_greedy_choice(logits, vocab, all, p));
  if (kv_type == kv::KvType::f32) {
    const auto last = session.last_logits();
    const float* row = logits.data() + (all.size() - 2) * vocab;
    double max_diff = 0;
    for (size_t i = 0; i < vocab; ++i) max_diff = std::max(max_diff, double(std::fabs(last[i] - row[i])));
    CHECK(max_diff <= 1e-4);
  }
}

}  // namespace

TEST_CASE("stories260K: turn by turn equals all at once (F32 and INT8 KV)") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::vector<Turn> turns = {{"Once upon a time", 30}, {"The dog said", 25},
                                   {"Then", 40}, {"", 7}, {"They were happy.", 20}};
  for (auto type : {kv::KvType::f32, kv::KvType::int8, kv::KvType::f16}) {
    check_turns_equal_all_at_once(gguf.string(), type, turns);
  }
}

TEST_CASE("synthetic model: turn by turn equals all at once (F32 and INT8 KV)") {
  const std::vector<Turn> turns = {{"a b c", 9}, {"d e f g h", 17}, {"i", 3}, {"j k", 30}};
  for (auto type : {kv::KvType::f32, kv::KvType::int8}) {
    check_turns_equal_all_at_once(small_synthetic_model(), type, turns);
  }
}
