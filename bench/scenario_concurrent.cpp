// concurrent: N sessions generating at the same time, each from its own thread, with their
// decode steps shared (the engine's default) and, for comparison, run one by one. Each session
// has its own prompt of C tokens (--context, the first value; its own cache scope) and
// generates G (--tokens). decode_tok_s is the tokens all of them generated after their first,
// N x (G - 1), over the time from the earliest first token to the latest last token; tpot is
// each session's own gap between tokens. A shared step reads every weight once for all of its
// sessions, so the bandwidth utilisation counts the weights once per step and the K/V once per
// token. Then a line with `beside_prompt_tokens`: one session generating while another's
// prompt of P tokens (--prompt-tokens, the first value) is computed, from the first one's
// first token on: its token gaps (tpot_ms_*, tpot_ms_max) and the prompt's prefill_tok_s.
#include <algorithm>
#include <future>
#include <latch>
#include <thread>

#include "decode_timing_fields.h"
#include "decode_traffic.h"
#include "engine/clock.h"
#include "prompt_text.h"
#include "scenarios.h"
#include "summary_stats.h"
#include "token_timing.h"

namespace parley::bench {
namespace {

struct SessionRun {
  TimedTurn turn;
  double first_token_ms = 0;  // engine::now_ms() clock
  double last_token_ms = 0;
};

std::vector<SessionRun> run_sessions_together(const std::shared_ptr<engine::Engine>& engine,
                                              const std::vector<std::string>& prompts,
                                              uint32_t gen_tokens) {
  std::vector<SessionRun> runs(prompts.size());
  std::latch start(std::ptrdiff_t(prompts.size()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      engine::SessionOptions options;
      options.chat_template = text::TemplateKind::raw;
      options.cache_scope = "concurrent-" + std::to_string(i);
      engine::Session session(engine, options);
      start.arrive_and_wait();
      const double sent = engine::now_ms();
      SessionRun& r = runs[i];
      r.turn = send_timed(session, prompts[i], fixed_length_params(gen_tokens));
      r.first_token_ms = sent + r.turn.stats.ttft_ms;
      r.last_token_ms = r.first_token_ms;
      for (double gap : r.turn.tpot_ms) r.last_token_ms += gap;
    });
  }
  for (std::thread& t : threads) t.join();
  return runs;
}

// One session generates `gen_tokens`; another's prompt of `prompt_tokens` starts at the first
// one's first token.
void run_beside_prompt(BenchContext& ctx, kv::KvType kv) {
  const BenchArgs& a = ctx.args();
  const auto engine = ctx.make_engine(kv);
  const uint32_t prompt = std::min(a.prompt_tokens.front(), engine->context_length() / 2);
  if (a.gen_tokens + 17 > engine->context_length() || prompt < 2) {
    ctx.write_skipped("concurrent", *engine, "--tokens or --prompt-tokens do not fit the context");
    return;
  }
  warm_up(engine);
  const std::string long_prompt = text_of_tokens(engine->tokenizer(), prompt - 1, 300);
  const engine::StepStats before = engine->stats().decode;
  std::promise<void> generating;
  TimedTurn prompted;
  std::thread other([&] {
    engine::SessionOptions options;
    options.chat_template = text::TemplateKind::raw;
    options.cache_scope = "beside-prompt";
    engine::Session session(engine, options);
    generating.get_future().wait();
    prompted = send_timed(session, long_prompt, fixed_length_params(1));
  });
  engine::SessionOptions options;
  options.chat_template = text::TemplateKind::raw;
  options.cache_scope = "beside-generating";
  engine::Session session(engine, options);
  std::vector<double> gaps;
  double last = 0;
  bool started = false;
  const auto start_other = [&] {
    if (!started) generating.set_value();
    started = true;
  };
  engine::TurnStats stats;
  try {
    session.send(text_of_tokens(engine->tokenizer(), 16), fixed_length_params(a.gen_tokens),
                 [&](std::string_view) {
                   const double t = engine::now_ms();
                   if (last != 0) gaps.push_back(t - last);
                   last = t;
                   start_other();
                   return true;
                 },
                 stats);
  } catch (...) {
    start_other();  // the other thread waits for it
    other.join();
    throw;
  }
  start_other();  // a reply whose text all came at its end
  other.join();

  nlohmann::ordered_json line = ctx.line("concurrent", *engine);
  line["prompt_tokens"] = prompted.stats.prompt_tokens;
  line["context_tokens"] = stats.prompt_tokens;
  line["generated_tokens"] = a.gen_tokens;
  line["prefill_tok_s"] = prompted.prefill_tok_s();
  line["ttft_ms"] = prompted.stats.ttft_ms;
  put_decode_timings(line, gaps);
  line["tpot_ms_max"] = gaps.empty() ? 0.0 : *std::max_element(gaps.begin(), gaps.end());
  line["sessions"] = 2;
  line["shared_steps"] = true;
  line["beside_prompt_tokens"] = prompted.stats.prompt_tokens;
  const engine::StepStats after = engine->stats().decode;
  line["decode_steps"] = after.steps - before.steps;
  line["sessions_per_step"] =
      after.steps > before.steps
          ? double(after.tokens - before.tokens) / double(after.steps - before.steps)
          : 0.0;
  ctx.write(line);
}

}  // namespace

void run_concurrent(BenchContext& ctx) {
  const BenchArgs& a = ctx.args();
  const double copy_gb_s = ctx.copy_bandwidth().gb_per_s;
  for (kv::KvType kv : ctx.kv_types(kDefaultKvType)) {
    for (uint32_t n : a.concurrent_sessions) {
      for (bool shared : {true, false}) {
        const auto engine = ctx.make_engine(kv, "", shared);
        const uint32_t prompt = std::min(a.context_tokens.front(), engine->context_length() / 2);
        if (prompt + a.gen_tokens + 1 > engine->context_length()) {
          ctx.write_skipped("concurrent", *engine, "--context and --tokens exceed the context");
          continue;
        }
        warm_up(engine);
        std::vector<std::string> prompts;
        for (uint32_t i = 0; i < n; ++i) {
          prompts.push_back(text_of_tokens(engine->tokenizer(), prompt - 1, size_t(i) * 11));
        }
        const engine::StepStats before = engine->stats().decode;
        const std::vector<SessionRun> runs = run_sessions_together(engine, prompts, a.gen_tokens);
        const engine::StepStats after = engine->stats().decode;

        double first = runs[0].first_token_ms, last = runs[0].last_token_ms;
        std::vector<double> ttft, tpot;
        uint32_t context = 0;
        for (const SessionRun& r : runs) {
          first = std::min(first, r.first_token_ms);
          last = std::max(last, r.last_token_ms);
          ttft.push_back(r.turn.stats.ttft_ms);
          tpot.insert(tpot.end(), r.turn.tpot_ms.begin(), r.turn.tpot_ms.end());
          context = std::max(context, r.turn.context_tokens());
        }
        const double window_s = (last - first) / 1000;
        const double tokens = double(n) * (a.gen_tokens - 1);
        const double steps = double(after.steps - before.steps);

        nlohmann::ordered_json line = ctx.line("concurrent", *engine);
        line["prompt_tokens"] = runs[0].turn.stats.prompt_tokens;
        line["context_tokens"] = context;
        line["generated_tokens"] = a.gen_tokens;
        line["ttft_ms"] = median(ttft);
        put_decode_timings(line, tpot);  // per-session gaps; decode_tok_s is replaced below
        line["decode_tok_s"] = window_s > 0 ? tokens / window_s : 0.0;
        line["sessions"] = n;
        line["shared_steps"] = shared;
        line["decode_steps"] = after.steps - before.steps;
        line["sessions_per_step"] =
            steps > 0 ? double(after.tokens - before.tokens) / steps : 0.0;
        const double bytes =
            double(weight_bytes_per_token(engine->model().weights)) * steps +
            kv_bytes_read_per_token(engine->stats().kv_bytes_per_token, context, a.gen_tokens) *
                tokens;
        if (copy_gb_s > 0 && window_s > 0) {
          line["decode_bandwidth_utilisation"] = bytes / window_s / 1e9 / copy_gb_s;
        }
        ctx.write(line);
      }
    }
    run_beside_prompt(ctx, kv);
  }
}

}  // namespace parley::bench
