#include "timed_generation.h"

#include <algorithm>
#include <atomic>

#include "bench_context.h"
#include "prompt_text.h"

namespace parley::bench {
namespace {

// text_of_tokens may overshoot by a piece where no cut of the text is exact; at the end of
// the context that would not fit, so a shorter cut is taken where there is one.
std::string prompt_of_tokens(const text::Tokenizer& tokenizer, uint32_t prompt_tokens) {
  std::string prompt;
  for (uint32_t n = prompt_tokens - 1; n > 0; --n) {
    prompt = text_of_tokens(tokenizer, n);
    if (tokenizer.encode(prompt).size() <= prompt_tokens - 1) break;
  }
  return prompt;
}

// A cache scope of its own for every run. The prompts of all lengths start with the same
// words: a scope per run index alone would let a longer prompt find a shorter one's blocks.
std::string next_run_scope() {
  static std::atomic<uint64_t> next{0};
  return "run-" + std::to_string(next++);
}

}  // namespace

std::vector<double> GenerationRuns::ttft_ms() const {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.stats.ttft_ms);
  return v;
}

std::vector<double> GenerationRuns::prefill_tok_s() const {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.prefill_tok_s());
  return v;
}

std::vector<double> GenerationRuns::tpot_ms() const {
  std::vector<double> v;
  for (const auto& r : runs) v.insert(v.end(), r.tpot_ms.begin(), r.tpot_ms.end());
  return v;
}

std::vector<std::string> distinct_prompts(const text::Tokenizer& tokenizer,
                                          const std::vector<uint32_t>& wanted, uint32_t cap) {
  std::vector<std::string> prompts;
  std::vector<size_t> lengths;
  for (uint32_t p : wanted) {
    std::string prompt = prompt_of_tokens(tokenizer, std::min(p, cap));
    const size_t length = tokenizer.encode(prompt).size();
    if (std::find(lengths.begin(), lengths.end(), length) != lengths.end()) continue;
    lengths.push_back(length);
    prompts.push_back(std::move(prompt));
  }
  return prompts;
}

GenerationRuns run_generations(const std::shared_ptr<engine::Engine>& engine,
                               const std::string& prompt, uint32_t gen_tokens, uint32_t repeat) {
  GenerationRuns out;
  for (uint32_t r = 0; r < repeat; ++r) {
    engine::SessionOptions options;
    options.chat_template = text::TemplateKind::raw;
    options.cache_scope = next_run_scope();
    engine::Session session(engine, options);
    out.runs.push_back(send_timed(session, prompt, fixed_length_params(gen_tokens)));
    const TimedTurn& run = out.runs.back();
    out.prompt_tokens = run.stats.prompt_tokens;
    out.context_tokens = run.context_tokens();
    out.reused_tokens = std::max(out.reused_tokens, run.stats.reused_tokens);
  }
  return out;
}

}  // namespace parley::bench
