// parley-bench: runs the chosen scenarios on one model and prints one JSON object per line
// for each measurement (bench/RESULTS.md says which and how). Writes nothing but stdout and
// --out.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>
#include <string>

#include "bench_args.h"
#include "bench_context.h"
#include "device_bandwidth.h"
#include "device_probe.h"
#include "json_lines.h"
#include "memory_bandwidth.h"
#include "model_source.h"
#include "parley.h"
#include "scenarios.h"

namespace parley::bench {

const std::vector<Scenario>& all_scenarios() {
  static const std::vector<Scenario> scenarios = {
      {"kv-bytes", run_kv_bytes}, {"prefix", run_prefix}, {"turn", run_turn},
      {"prefill", run_prefill},   {"decode", run_decode}, {"codec", run_codec},
      {"spill", run_spill},       {"concurrent", run_concurrent},
      {"json-format", run_json_format},
  };
  return scenarios;
}

namespace {

constexpr int kCopyRuns = 5;

// 0, or 1 with a message when what went to stdout did not all get there.
int flushed_stdout() {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return 0;
  std::fprintf(stderr, "parley-bench: cannot write to stdout: %s\n",
               std::strerror(errno != 0 ? errno : EIO));
  return 1;
}

int run(const BenchArgs& args) {
  std::set<std::string> wanted(args.scenarios.begin(), args.scenarios.end());
  for (const std::string& name : wanted) {
    bool known = false;
    for (const Scenario& s : all_scenarios()) known = known || s.name == name;
    if (!known) throw std::invalid_argument("unknown --scenario '" + name + "' (see --help)");
  }
  JsonLines out(args.out_path);
  // Before minutes of building a model that could not run or would not fit.
  require_device(args.device);
  require_memory_for_synthetic(args);
  // Next, while this process is single-threaded and holds no model, so that the child it
  // forks has the machine's memory to itself. Every line reports it, so it always runs.
  const CopyBandwidth copy = measure_bandwidth(args, out, kCopyRuns);
  const ModelSource source(args);
  // On stderr, so stdout stays JSON lines only.
  std::fprintf(stderr, "parley-bench: %s: %.3g parameters, loaded in %.2f s\n",
               source.label().c_str(), double(source.n_params()), source.load_seconds());
  BenchContext ctx(args, source, out, copy);
  for (const Scenario& s : all_scenarios()) {
    if (wanted.empty() || wanted.count(std::string(s.name))) s.run(ctx);
  }
  return 0;
}

}  // namespace
}  // namespace parley::bench

int main(int argc, char** argv) {
  // A reader that goes away (`| head`) must show up as a write error that is reported, not
  // end the run silently.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const auto args = parley::bench::parse_args(argc, argv);
    if (args.help) {
      std::fputs(parley::bench::usage_text(), stdout);
      return parley::bench::flushed_stdout();
    }
    if (args.version) {
      std::printf("parley %s\n", parley_version());
      return parley::bench::flushed_stdout();
    }
    return parley::bench::run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parley-bench: %s\n", e.what());
    return 1;
  }
}
