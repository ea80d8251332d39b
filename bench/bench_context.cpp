#include "bench_context.h"

#include "backend/cpu/matmul_kernels.h"
#include "device_bandwidth.h"
#include "peak_rss.h"

namespace parley::bench {

namespace {

// Runs of each copy-loop measurement between timings: fewer than at start-up, as two of them
// come with every line that reports one.
constexpr int kAdjacentCopyRuns = 3;

}  // namespace

int BenchContext::threads() const { return resolved_threads(args_); }

std::optional<CopyBandwidth> BenchContext::copy_bandwidth_now() const {
  return measure_host_bandwidth_again(args_, kAdjacentCopyRuns);
}

std::vector<kv::KvType> BenchContext::kv_types(const std::vector<kv::KvType>& fallback) const {
  return args_.kv_types.empty() ? fallback : args_.kv_types;
}

std::shared_ptr<engine::Engine> BenchContext::make_engine(kv::KvType kv) const {
  return make_engine(kv, "");
}

std::shared_ptr<engine::Engine> BenchContext::make_engine(kv::KvType kv,
                                                          const std::string& store_path,
                                                          bool batch_decode) const {
  engine::EngineOptions options;
  options.device = args_.device;
  options.n_threads = args_.threads;
  options.kv_type = kv;
  options.store_path = store_path;
  options.batch_decode = batch_decode;
  return std::make_shared<engine::Engine>(source_.make_model(), options);
}

nlohmann::ordered_json BenchContext::line(std::string_view scenario, engine::Engine& engine) const {
  nlohmann::ordered_json l;
  for (std::string_view key : kCommonKeys) l[std::string(key)] = nullptr;
  l["scenario"] = scenario;
  l["model"] = source_.label();
  l["backend"] = engine.backend().name();
  l["threads"] = threads();
  // The SIMD target the CPU kernels dispatched to (AVX3 = AVX-512, AVX2, ..., SCALAR).
  if (engine.backend().name() == "cpu") l["simd"] = backend::cpu::matmul_target_name();
  l["kv"] = kv::kv_type_name(engine.kv_type());
  // A file's 4- to 6-bit blocks by their name (held as Q8_0).
  const model::TensorView& wq = engine.model().weights.layers.at(0).wq;
  l["weights"] = wq.file_blocks ? wq.file_blocks->name : model::dtype_name(wq.dtype);
  l["kv_bytes_per_token"] = engine.stats().kv_bytes_per_token;
  if (copy_bandwidth_.gb_per_s > 0) l["bandwidth_gbs"] = copy_bandwidth_.gb_per_s;
  if (copy_bandwidth_.read_gb_per_s > 0) l["read_bandwidth_gbs"] = copy_bandwidth_.read_gb_per_s;
  return l;
}

void BenchContext::write(nlohmann::ordered_json& line) {
  line["peak_rss_bytes"] = peak_rss_bytes();
  out_.write(line);
}

void BenchContext::write_skipped(std::string_view scenario, engine::Engine& engine,
                                 const std::string& why) {
  nlohmann::ordered_json l = line(scenario, engine);
  l["skipped"] = why;
  write(l);
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
