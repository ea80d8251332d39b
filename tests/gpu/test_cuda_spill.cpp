// A conversation spilled from the GPU resumes on the CPU and back, through the C API and a
// store file: with F32 weights on the device and F32 KV both backends take the same greedy
// path, so every reply equals the one of a CPU conversation that was never spilled; with
// INT8 KV on the GPU alone, spilled + restored == never spilled. The same holds when the
// device keeps new K/V rows until the host reads them (PARLEY_CUDA_KV_WRITEBACK=1).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

struct Turn {
  std::string text;
  int32_t kv_source = -1;
};

parley_engine* open_engine(const std::string& model, const char* device, int32_t kv_type,
                           const std::string& store) {
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = model.c_str();
  eo.device = device;
  eo.kv_type = kv_type;
  eo.n_threads = 2;
  eo.store_path = store.empty() ? nullptr : store.c_str();
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  return e;
}

Turn send(parley_session* s, const char* text) {
  const parley_generate_options g = greedy_options(24);
  parley_turn_stats st{};
  st.struct_size = sizeof st;
  Turn t;
  auto collect = [](const char* utf8, size_t len, void* user) {
    static_cast<std::string*>(user)->append(utf8, len);
    return 0;
  };
  REQUIRE_MESSAGE(parley_session_send(s, text, &g, collect, &t.text, &st) == PARLEY_OK, parley_last_error());
  t.kv_source = st.kv_source;
  return t;
}

parley_session* reopen(parley_engine* e, const char* id) {
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_open(e, id, &s) == PARLEY_OK, parley_last_error());
  return s;
}

const char* kTurns[] = {"Once upon a time", " The cat", " Then the dog"};

}  // namespace

TEST_CASE("spilled on the GPU, resumed on the CPU, and back: the replies of an unspilled run") {
  PARLEY_GPU_OR_SKIP();
  PARLEY_SHARED_OR_SKIP(model, "models/stories260k/hf");
  ScopedEnv f32("PARLEY_CUDA_WEIGHTS", "f32");
  TempDir dir;
  const std::string store = (dir / "s.db").string();

  std::vector<std::string> want;
  {
    parley_engine* e = open_engine(model.string(), "cpu", PARLEY_KV_F32, "");
    parley_session* s = create_raw_session(e, "ref");
    for (const char* t : kTurns) want.push_back(send(s, t).text);
    parley_session_close(s);
    parley_engine_close(e);
  }
  const char* devices[] = {"cuda", "cpu", "cuda"};
  for (int i = 0; i < 3; ++i) {
    CAPTURE(devices[i]);
    parley_engine* e = open_engine(model.string(), devices[i], PARLEY_KV_F32, store);
    parley_session* s = i == 0 ? create_raw_session(e, "conv") : reopen(e, "conv");
    const Turn t = send(s, kTurns[i]);
    CHECK(t.text == want[size_t(i)]);
    if (i > 0) CHECK(t.kv_source == PARLEY_KV_SOURCE_RESTORED);
    REQUIRE(parley_session_suspend(s) == PARLEY_OK);
    parley_session_close(s);
    parley_engine_close(e);
  }
}

TEST_CASE("INT8 KV on the GPU: spilled and restored == never spilled") {
  PARLEY_GPU_OR_SKIP();
  PARLEY_SHARED_OR_SKIP(model, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string store = (dir / "s.db").string();
  parley_engine* e = open_engine(model.string(), "cuda", PARLEY_KV_INT8, store);
  parley_session* kept = create_raw_session(e, "kept");
  parley_session* spilled = create_raw_session(e, "spilled");
  for (const char* t : kTurns) {
    const Turn a = send(kept, t);
    REQUIRE(parley_session_suspend(spilled) == PARLEY_OK);
    const Turn b = send(spilled, t);
    CHECK(a.text == b.text);
  }
  parley_session_close(kept);
  parley_session_close(spilled);
  parley_engine_close(e);
}

// With PARLEY_CUDA_KV_WRITEBACK=1 new K/V rows stay on the device and the host gets a block's
// bytes back only when it reads them: to spill (suspend, close), to fork (the partial block is
// copied) and to copy on write (a rewind into blocks the fork shares). With F32 weights and
// F32 KV the GPU follows the CPU's greedy path, so each reply equals a CPU conversation's that
// went through the same steps in memory.
TEST_CASE("rows kept on the device until the host reads them: suspend, fork, rewind, resume on the CPU") {
  PARLEY_GPU_OR_SKIP();
  PARLEY_SHARED_OR_SKIP(model, "models/stories260k/hf");
  ScopedEnv f32("PARLEY_CUDA_WEIGHTS", "f32");
  ScopedEnv write_back("PARLEY_CUDA_KV_WRITEBACK", "1");
  TempDir dir;
  const std::string store = (dir / "s.db").string();

  // Both runs: turn 1, (suspend), turn 2, fork and a turn on the fork, rewind the original
  // by one exchange and a different turn, then one more turn.
  auto conversation = [&](parley_engine* e, bool gpu, std::vector<std::string>& texts) {
    parley_session* s = create_raw_session(e, "conv");
    texts.push_back(send(s, kTurns[0]).text);
    if (gpu) REQUIRE(parley_session_suspend(s) == PARLEY_OK);
    const Turn second = send(s, kTurns[1]);
    if (gpu) CHECK(second.kv_source == PARLEY_KV_SOURCE_RESTORED);
    texts.push_back(second.text);
    parley_session* f = nullptr;
    REQUIRE(parley_session_fork(s, "conv-fork", &f) == PARLEY_OK);
    texts.push_back(send(f, kTurns[2]).text);
    REQUIRE(parley_session_rewind(s, 2) == PARLEY_OK);
    texts.push_back(send(s, " A bird").text);
    parley_session_close(f);
    return s;
  };

  std::vector<std::string> want, got;
  {
    parley_engine* e = open_engine(model.string(), "cpu", PARLEY_KV_F32, "");
    parley_session* s = conversation(e, false, want);
    want.push_back(send(s, " The end").text);
    parley_session_close(s);
    parley_engine_close(e);
  }
  {
    parley_engine* e = open_engine(model.string(), "cuda", PARLEY_KV_F32, store);
    parley_session_close(conversation(e, true, got));  // closing spills: the last reads
    parley_engine_close(e);
  }
  {
    parley_engine* e = open_engine(model.string(), "cpu", PARLEY_KV_F32, store);
    parley_session* s = reopen(e, "conv");
    const Turn last = send(s, " The end");
    CHECK(last.kv_source == PARLEY_KV_SOURCE_RESTORED);
    got.push_back(last.text);
    parley_session_close(s);
    parley_engine_close(e);
  }
  CHECK(got == want);
}
