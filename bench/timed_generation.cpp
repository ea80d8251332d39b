#include "timed_generation.h"

#include "bench_context.h"
#include "prompt_text.h"

namespace parley::bench {

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

GenerationRuns run_generations(const std::shared_ptr<engine::Engine>& engine,
                               uint32_t prompt_tokens, uint32_t gen_tokens, uint32_t repeat) {
  // The raw template's first turn is BOS + the text. text_of_tokens may overshoot by a piece
  // where no cut of the text is exact; at the end of the context that would not fit.
  std::string prompt;
  for (uint32_t n = prompt_tokens - 1; n > 0; --n) {
    prompt = text_of_tokens(engine->tokenizer(), n);
    if (engine->tokenizer().encode(prompt).size() <= prompt_tokens - 1) break;
  }
  GenerationRuns out;
  for (uint32_t r = 0; r < repeat; ++r) {
    engine::SessionOptions options;
    options.chat_template = text::TemplateKind::raw;
    options.cache_scope = "run-" + std::to_string(r);
    engine::Session session(engine, options);
    out.runs.push_back(send_timed(session, prompt, fixed_length_params(gen_tokens)));
    out.prompt_tokens = out.runs.back().stats.prompt_tokens;
    out.context_tokens = out.runs.back().context_tokens();
  }
  return out;
}

}  // namespace parley::bench
