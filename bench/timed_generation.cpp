#include "timed_generation.h"

#include "bench_context.h"
#include "prompt_text.h"

namespace parley::bench {

std::vector<double> GenerationRuns::ttft_ms() const {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.ttft_ms);
  return v;
}

std::vector<double> GenerationRuns::tpot_ms() const {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.tpot_ms);
  return v;
}

std::vector<double> GenerationRuns::prefill_tok_s() const {
  std::vector<double> v;
  for (const auto& r : runs)
    v.push_back(r.ttft_ms > 0 ? r.computed_tokens * 1000.0 / r.ttft_ms : 0);
  return v;
}

GenerationRuns run_generations(const std::shared_ptr<engine::Engine>& engine,
                               uint32_t prompt_tokens, uint32_t gen_tokens, uint32_t repeat) {
  // The raw template's first turn is BOS + the text.
  const std::string prompt = text_of_tokens(engine->tokenizer(), prompt_tokens - 1);
  GenerationRuns out;
  for (uint32_t r = 0; r < repeat; ++r) {
    engine::SessionOptions options;
    options.chat_template = text::TemplateKind::raw;
    options.cache_scope = "run-" + std::to_string(r);
    engine::Session session(engine, options);
    engine::TurnStats stats;
    session.send(prompt, fixed_length_params(gen_tokens), nullptr, stats);
    out.prompt_tokens = stats.prompt_tokens;
    out.runs.push_back(stats);
  }
  return out;
}

}  // namespace parley::bench
