#include "bench_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "common/thread_count.h"

namespace parley::bench {
namespace {

// An hour per codec timing: more is a typo, and would keep the scenario running for days.
constexpr double kMaxCodecSeconds = 3600;
// 64 GiB per array, two arrays: more than the memory of the machines this runs on.
constexpr uint64_t kMaxCopyMib = 65536;
// The most the library takes (parley.h, n_threads): the copy loop would fail to start more.
constexpr uint64_t kMaxThreads = 1024;

// Earlier names of scenarios, still accepted so that old command lines keep working.
constexpr std::pair<std::string_view, std::string_view> kScenarioAliases[] = {
    {"turns", "turn"},
    {"shared-prefix", "prefix"},
};

std::string canonical_scenario(std::string_view name) {
  for (const auto& [alias, canonical] : kScenarioAliases) {
    if (name == alias) return std::string(canonical);
  }
  return std::string(name);
}

// An empty list or item is refused rather than read as "the default": `--scenario ''` from a
// script whose variable was unset must not quietly run every scenario.
std::vector<std::string> split_commas(std::string_view flag, std::string_view s) {
  if (s.empty()) throw std::invalid_argument(std::string(flag) + " needs at least one value");
  std::vector<std::string> parts;
  for (std::string_view rest = s;;) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    if (part.empty()) {
      const std::string got = "got '" + std::string(s) + "'";
      throw std::invalid_argument(std::string(flag) + " needs a value between commas, " + got);
    }
    parts.emplace_back(part);
    if (comma == std::string_view::npos) return parts;
    rest.remove_prefix(comma + 1);
  }
}

// The fields counts go to are 32-bit: a larger value would wrap past `min`.
uint64_t parse_count(std::string_view flag, std::string_view value, uint64_t min,
                     uint64_t max = UINT32_MAX) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < min || n > max) {
    throw std::invalid_argument(std::string(flag) + " needs an integer from " +
                                std::to_string(min) + " to " + std::to_string(max) + ", got '" +
                                std::string(value) + "'");
  }
  return n;
}

std::vector<uint32_t> parse_counts(std::string_view flag, std::string_view value, uint64_t min) {
  std::vector<uint32_t> counts;
  for (const std::string& part : split_commas(flag, value)) {
    counts.push_back(uint32_t(parse_count(flag, part, min)));
  }
  return counts;
}

// Keeps the first of equal items, in order: a value given twice is measured once.
template <typename T>
void remove_repeats(std::vector<T>& items) {
  std::vector<T> kept;
  for (const T& item : items) {
    if (std::find(kept.begin(), kept.end(), item) == kept.end()) kept.push_back(item);
  }
  items = std::move(kept);
}

void remove_repeated_values(BenchArgs& a) {
  remove_repeats(a.kv_types);
  remove_repeats(a.prompt_tokens);
  remove_repeats(a.context_tokens);
  remove_repeats(a.spill_tokens);
  remove_repeats(a.concurrent_sessions);
}

// from_chars reads "inf" and "nan" too: neither is a time a scenario could ever reach.
double parse_seconds(std::string_view flag, std::string_view value, double max) {
  double s = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
  const bool whole = ec == std::errc() && end == value.data() + value.size();
  if (!whole || !std::isfinite(s) || s < 0 || s > max) {
    char range[64];
    std::snprintf(range, sizeof range, " needs seconds from 0 to %g, got '", max);
    throw std::invalid_argument(std::string(flag) + range + std::string(value) + "'");
  }
  return s;
}

model::DType parse_weights(std::string_view flag, std::string_view value) {
  if (value == "f32") return model::DType::f32;
  if (value == "f16") return model::DType::f16;
  if (value == "bf16") return model::DType::bf16;
  if (value == "q8_0") return model::DType::q8_0;
  if (value == "q4_0") return model::DType::q4_0;
  if (value == "q4_1") return model::DType::q4_1;
  if (value == "q5_1") return model::DType::q5_1;
  throw std::invalid_argument(std::string(flag) +
                              " must be f32, f16, bf16, q8_0, q4_0, q4_1 or q5_1, got '" +
                              std::string(value) + "'");
}

kv::KvType parse_kv(std::string_view value) {
  if (value == "int8") return kv::KvType::int8;
  if (value == "f16") return kv::KvType::f16;
  if (value == "f32") return kv::KvType::f32;
  throw std::invalid_argument("--kv must be int8, f16 or f32, got '" + std::string(value) + "'");
}

// The flags that take a value, each handled in parse_args: one not here is unknown, said as
// such rather than as a flag short of its value.
bool takes_value(std::string_view flag) {
  static constexpr std::string_view kFlags[] = {
      "--model",         "--synthetic",   "--weights",       "--dtype",      "--seed",
      "--device",        "--scenario",    "--threads",       "--kv",         "--repeat",
      "--out",           "--sessions",    "--system-tokens", "--turns",      "--turn-tokens",
      "--prompt-tokens", "--context",     "--tokens",        "--gen-tokens", "--spill-tokens",
      "--concurrent",    "--codec-min-s", "--copy-mib"};
  return std::find(std::begin(kFlags), std::end(kFlags), flag) != std::end(kFlags);
}

}  // namespace

BenchArgs parse_args(int argc, char** argv) {
  BenchArgs a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      a.help = true;
      continue;
    }
    if (flag == "--version") {
      a.version = true;
      continue;
    }
    if (!takes_value(flag)) {
      throw std::invalid_argument("unknown flag '" + std::string(flag) + "' (see --help)");
    }
    if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
    const std::string_view value = argv[++i];
    if (flag == "--model") {
      a.model_path = value;
    } else if (flag == "--synthetic") {
      a.synthetic = value;
    } else if (flag == "--weights" || flag == "--dtype") {
      a.weights = parse_weights(flag, value);
    } else if (flag == "--seed") {
      a.seed = parse_count(flag, value, 0, UINT64_MAX);
    } else if (flag == "--device") {
      a.device = value;
    } else if (flag == "--scenario") {
      for (auto& s : split_commas(flag, value)) a.scenarios.push_back(canonical_scenario(s));
    } else if (flag == "--threads") {
      a.threads = int32_t(parse_count(flag, value, 0, kMaxThreads));
    } else if (flag == "--kv") {
      for (auto& s : split_commas(flag, value)) a.kv_types.push_back(parse_kv(s));
    } else if (flag == "--repeat") {
      a.repeat = uint32_t(parse_count(flag, value, 1));
    } else if (flag == "--out") {
      a.out_path = value;
    } else if (flag == "--sessions") {
      a.sessions = uint32_t(parse_count(flag, value, 2));
    } else if (flag == "--system-tokens") {
      a.system_tokens = uint32_t(parse_count(flag, value, 1));
    } else if (flag == "--turns") {
      a.turns = uint32_t(parse_count(flag, value, 1));
    } else if (flag == "--turn-tokens") {
      a.turn_tokens = uint32_t(parse_count(flag, value, 2));  // TPOT needs two tokens
    } else if (flag == "--prompt-tokens") {
      a.prompt_tokens = parse_counts(flag, value, 2);
    } else if (flag == "--context") {
      a.context_tokens = parse_counts(flag, value, 1);
    } else if (flag == "--tokens" || flag == "--gen-tokens") {
      a.gen_tokens = uint32_t(parse_count(flag, value, 2));  // TPOT needs two tokens
    } else if (flag == "--spill-tokens") {
      a.spill_tokens = parse_counts(flag, value, 2);
    } else if (flag == "--concurrent") {
      a.concurrent_sessions = parse_counts(flag, value, 1);
    } else if (flag == "--codec-min-s") {
      a.codec_min_seconds = parse_seconds(flag, value, kMaxCodecSeconds);
    } else if (flag == "--copy-mib") {
      a.copy_mib = uint32_t(parse_count(flag, value, 1, kMaxCopyMib));
    }
  }
  if (a.help || a.version) return a;
  remove_repeated_values(a);
  if (a.model_path.empty() == a.synthetic.empty()) {
    throw std::invalid_argument("give exactly one of --model PATH and --synthetic NAME");
  }
  if (a.weights && !a.model_path.empty()) {
    throw std::invalid_argument("--weights applies to --synthetic only; a model file has its own");
  }
  return a;
}

const char* usage_text() {
  return R"(parley-bench: prints one JSON object per line for each measurement.

  --model PATH          GGUF file or Hugging Face directory
  --synthetic NAME      random weights of a known shape, built in memory: stories260k-shape,
                        stories15m, stories110m, tinyllama-1.1b, llama2-7b
  --weights T           synthetic weights: f32, f16 (default), bf16, q8_0, q4_0, q4_1, q5_1
                        (alias --dtype)
  --seed N              synthetic weights seed (default 1)
  --device D            engine device: cpu (default), auto, cuda, cuda:N
  --scenario A[,B...]   prefill, decode, turn, prefix, spill, kv-bytes, codec, concurrent,
                        json-format
                        (default: all; turns and shared-prefix are old names of turn and
                        prefix)
  --threads N           CPU threads, 0 to 1024 (default 0: one per core)
  --kv T[,T...]         int8, f16, f32 (default: all three where a scenario compares
                        them, else int8)
  --repeat N            timed runs for prefill and decode (default 3)
  --out FILE            also append the JSON lines to FILE
  --prompt-tokens N[,N...]  prefill: prompt lengths (default 128,512,2048), each capped to
                        the model's context
  --context N[,N...]    decode: tokens already in the cache when decoding starts (default
                        128), each capped so that --tokens still fit in the model's context
  --tokens N            decode: generated tokens (default 64; alias --gen-tokens)
  --turns N             turn: conversation length (default 10)
  --turn-tokens N       turn: tokens per reply, at least 2 (default 32, less if the context
                        is short)
  --sessions N          prefix: sessions sharing the system prompt (default 8)
  --system-tokens N     prefix: system prompt length (default 200)
  --spill-tokens N[,N...]  spill: conversation lengths (default 512,2048), each capped to
                        the model's context
  --concurrent N[,N...]  concurrent: sessions generating at once (default 1,2,4,8); each
                        has a prompt of --context tokens (the first) and generates --tokens
  --codec-min-s S       codec: least seconds per timing (default 0.3, at most 3600)
  --copy-mib N          bandwidth copy loop: MiB per array, two arrays (default 512, at most
                        65536; arrays that fit in the caches overstate bandwidth_gbs, so
                        smaller is for quick checks)
  --version             the library's version
  -h, --help            this text

Each value of a list runs once: a repeated value, or lengths that capping makes equal, give
one line. A prompt length that no cut of the prompt text reaches is measured at the nearest
length below it (or above it, where none is below); lines report the length measured.
)";
}

int resolved_threads(const BenchArgs& args) {
  return int(resolved_thread_count(args.threads));
}

}  // namespace parley::bench
