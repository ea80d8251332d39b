// json-format: what holding replies to JSON (PARLEY_FORMAT_JSON) costs per generated token:
// the walk over the model's vocabulary that finds the tokens allowed next, in the states a
// reply passes through, and the one-time sort of the vocabulary. One thread.
#include <algorithm>
#include <chrono>

#include "scenarios.h"
#include "text/json_prefix.h"

namespace parley::bench {
namespace {

// Replies so far, each in a state that allows a different share of the vocabulary.
struct ReplyState {
  const char* name;
  const char* text;
};
constexpr ReplyState kStates[] = {
    {"key", "{"},                                // a key's quote or '}'
    {"string", "{\"story\": \"Once upon a time"},  // most tokens go
    {"number", "{\"a\": 12"},
    {"value", "{\"a\": "},                       // any value's start
    {"after-value", "{\"a\": \"x\""},            // ',' or '}'
};
constexpr double kMinSeconds = 0.2;

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

void run_json_format(BenchContext& ctx) {
  for (kv::KvType kv : ctx.kv_types(kDefaultKvType)) {
    const auto engine = ctx.make_engine(kv);
    auto start = std::chrono::steady_clock::now();
    const engine::JsonVocabulary& vocabulary = engine->json_vocabulary();
    const double build_ms = ms_since(start);
    std::vector<uint8_t> allowed(size_t(engine->tokenizer().n_vocab()));
    for (const ReplyState& state : kStates) {
      text::JsonPrefix prefix;
      prefix.feed(std::string_view(state.text));
      // Passes until kMinSeconds have gone by, at least three; the median pass.
      std::vector<double> passes;
      start = std::chrono::steady_clock::now();
      while (passes.size() < 3 || ms_since(start) < kMinSeconds * 1000) {
        const auto pass = std::chrono::steady_clock::now();
        vocabulary.allowed(prefix, allowed);
        passes.push_back(ms_since(pass));
      }
      std::nth_element(passes.begin(), passes.begin() + ptrdiff_t(passes.size() / 2),
                       passes.end());
      nlohmann::ordered_json line = ctx.line("json-format", *engine);
      line["state"] = state.name;
      line["reply_so_far"] = state.text;
      line["mask_ms"] = passes[passes.size() / 2];
      line["allowed_tokens"] = std::count(allowed.begin(), allowed.end(), uint8_t{1});
      line["vocabulary_tokens"] = allowed.size();
      line["vocabulary_sort_ms"] = build_ms;
      ctx.write(line);
    }
  }
}

}  // namespace parley::bench
