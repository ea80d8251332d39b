#include "bench_context.h"

namespace parley::bench {

int BenchContext::threads() const { return resolved_threads(args_); }

std::vector<kv::KvType> BenchContext::kv_types(const std::vector<kv::KvType>& fallback) const {
  return args_.kv_types.empty() ? fallback : args_.kv_types;
}

std::shared_ptr<engine::Engine> BenchContext::make_engine(kv::KvType kv) const {
  return make_engine(kv, "");
}

std::shared_ptr<engine::Engine> BenchContext::make_engine(kv::KvType kv,
                                                          const std::string& store_path) const {
  engine::EngineOptions options;
  options.device = "cpu";
  options.n_threads = args_.threads;
  options.kv_type = kv;
  options.store_path = store_path;
  return std::make_shared<engine::Engine>(source_.view(), options);
}

nlohmann::ordered_json BenchContext::line(std::string_view scenario, engine::Engine& engine) const {
  return nlohmann::ordered_json{
      {"scenario", scenario},
      {"model", source_.label()},
      {"backend", engine.backend().name()},
      {"threads", threads()},
      {"kv", kv::kv_type_name(engine.kv_type())},
      {"weights", model::dtype_name(engine.model().weights.layers.at(0).wq.dtype)},
  };
}

void BenchContext::write_skipped(std::string_view scenario, engine::Engine& engine,
                                 const std::string& why) {
  nlohmann::ordered_json l = line(scenario, engine);
  l["skipped"] = why;
  out_.write(l);
}

engine::GenerateParams fixed_length_params(uint32_t max_tokens) {
  engine::GenerateParams p;
  p.sampler.temperature = 0;
  p.seed = 1;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

void warm_up(const std::shared_ptr<engine::Engine>& engine) {
  engine::SessionOptions options;
  options.cache_scope = "warm-up";
  engine::Session session(engine, options);
  engine::TurnStats stats;
  session.send("Hello there.", fixed_length_params(2), nullptr, stats);
}

}  // namespace parley::bench
