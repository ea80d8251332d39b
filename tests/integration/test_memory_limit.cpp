// A process in a memory cgroup (a container's limit): a model whose weights would not fit is
// refused with OUT_OF_MEMORY naming the limit, where the kernel would otherwise end the
// process as the copies fill its memory; a model that fits opens, its automatic KV budget a
// quarter of the limit. Each case runs in a child moved into a cgroup of its own; where no
// cgroup can be made (not root, no memory controller), the test says so and skips.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "parley.h"
#include "support/sanitizer_build.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley;
using namespace parley::test;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kLimit = 64ull << 20;

bool write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return bool(out);
}

// A memory cgroup limited to `limit` bytes, made for one test run and removed after it (once
// its processes ended); path() is empty where none could be made.
class LimitedGroup {
 public:
  explicit LimitedGroup(uint64_t limit) {
    static int made = 0;
    const std::string name =
        "parley-test-" + std::to_string(::getpid()) + "-" + std::to_string(++made);
    std::error_code ec;
    const fs::path v1 = fs::path("/sys/fs/cgroup/memory") / name;
    if (fs::create_directory(v1, ec) &&
        write_file(v1 / "memory.limit_in_bytes", std::to_string(limit))) {
      path_ = v1;
      return;
    }
    fs::remove(v1, ec);
    // v2: a child of the root, where the root hands the memory controller down.
    std::ifstream subtree("/sys/fs/cgroup/cgroup.subtree_control");
    std::string controllers;
    std::getline(subtree, controllers);
    const fs::path v2 = fs::path("/sys/fs/cgroup") / name;
    if (controllers.find("memory") != std::string::npos && fs::create_directory(v2, ec) &&
        write_file(v2 / "memory.max", std::to_string(limit))) {
      path_ = v2;
      return;
    }
    fs::remove(v2, ec);
  }
  ~LimitedGroup() {
    std::error_code ec;
    if (!path_.empty()) fs::remove(path_, ec);
  }
  LimitedGroup(const LimitedGroup&) = delete;
  LimitedGroup& operator=(const LimitedGroup&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Outcome {
  parley_status status = PARLEY_OK;
  uint64_t kv_budget = 0;
  std::string message;
};

// Opens `model` in a child moved into `group`; what the child saw comes back through a pipe.
// nullopt when the child did not finish (the kernel ended it).
std::optional<Outcome> open_in_group(const fs::path& group, const std::string& model) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    if (!write_file(group / "cgroup.procs", std::to_string(::getpid()))) ::_exit(3);
    parley_engine_options o;
    parley_engine_options_init(&o);
    o.model_path = model.c_str();
    o.n_threads = 1;
    parley_engine* e = nullptr;
    Outcome out;
    out.status = parley_engine_open(&o, &e);
    if (out.status == PARLEY_OK) {
      parley_engine_stats stats;
      stats.struct_size = sizeof stats;
      if (parley_engine_get_stats(e, &stats) == PARLEY_OK) out.kv_budget = stats.kv_budget_bytes;
      parley_engine_close(e);
    }
    const std::string text = std::to_string(out.status) + " " + std::to_string(out.kv_budget) +
                             " " + (out.status ? parley_last_error() : "");
    const bool sent = ::write(fds[1], text.data(), text.size()) == ssize_t(text.size());
    ::_exit(sent ? 0 : 4);
  }
  ::close(fds[1]);
  const std::string text = read_to_end(fds[0]);
  ::close(fds[0]);
  int wait_status = 0;
  REQUIRE(::waitpid(child, &wait_status, 0) == child);
  if (!WIFEXITED(wait_status)) {
    INFO("the child ended by signal " << WTERMSIG(wait_status));
    return std::nullopt;
  }
  REQUIRE(WEXITSTATUS(wait_status) == 0);
  Outcome out;
  int status = 0;
  unsigned long long budget = 0;
  int consumed = 0;
  REQUIRE(std::sscanf(text.c_str(), "%d %llu %n", &status, &budget, &consumed) >= 2);
  out.status = parley_status(status);
  out.kv_budget = budget;
  out.message = text.substr(size_t(consumed));
  return out;
}

// A synthetic F32 model of `n_layers` layers of about 13.6 MB each, written in `dir`.
std::string layered_model(const TempDir& dir, int32_t n_layers) {
  SynthSpec spec;
  spec.dim = 512;
  spec.hidden_dim = 1536;
  spec.n_layers = n_layers;
  spec.n_heads = 8;
  spec.n_kv_heads = 8;
  spec.n_vocab = 320;
  spec.context_length = 64;
  const auto path = dir / ("layers-" + std::to_string(n_layers) + ".gguf");
  write_gguf(spec, make_synth_weights(spec), make_spm_vocab(spec.n_vocab), path);
  return path.string();
}

// Why a cgroup test cannot run here, or "" where it can.
std::string cgroup_test_refusal(const LimitedGroup& group) {
  if (kSanitizerBuild) return "a sanitizer's own memory does not fit the test's small cgroup";
  if (group.path().empty()) {
    return "no memory cgroup can be made here (needs root and a memory controller)";
  }
  return "";
}

}  // namespace

TEST_CASE("a memory cgroup's limit: too large a model is OUT_OF_MEMORY, one that fits opens") {
  const LimitedGroup limited(kLimit);
  const fs::path& group = limited.path();
  if (const std::string why = cgroup_test_refusal(limited); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  TempDir dir;
  SUBCASE("weights of about twice the limit") {
    const std::string path = layered_model(dir, 10);
    REQUIRE(fs::file_size(path) > 2 * kLimit);
    const auto out = open_in_group(group, path);
    REQUIRE_MESSAGE(out, "the child was ended instead of refused");
    INFO(out->message);
    CHECK(out->status == PARLEY_E_OUT_OF_MEMORY);
    CHECK(out->message.find("the CPU backend's copy of the model's weights needs") !=
          std::string::npos);
    CHECK(out->message.find("the limit of the memory cgroup") != std::string::npos);
  }
  SUBCASE("stories260K: opens, its KV budget a quarter of the limit") {
    PARLEY_SHARED_OR_SKIP(model, "models/stories260k/stories260k-f32.gguf");
    const auto out = open_in_group(group, model.string());
    REQUIRE(out);
    INFO(out->message);
    CHECK(out->status == PARLEY_OK);
    CHECK(out->kv_budget == kLimit / 4);
  }
}

TEST_CASE("a memory cgroup's limit: weights that take most of it leave a smaller KV budget") {
  constexpr uint64_t kRoomier = 128ull << 20;
  const LimitedGroup limited(kRoomier);
  if (const std::string why = cgroup_test_refusal(limited); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  TempDir dir;
  const auto out = open_in_group(limited.path(), layered_model(dir, 7));
  REQUIRE(out);
  INFO(out->message);
  CHECK(out->status == PARLEY_OK);
  // The weights (about 96 MB) leave about 35 MB of the 134 MB: three quarters of that is
  // below a quarter of the limit.
  CHECK(out->kv_budget < kRoomier / 4);
  CHECK(out->kv_budget > 0);
}
