// parley_engine_options.on_load_progress: an open reports 0 first, then growing fractions as
// the weights are converted and taken by the backend, and 1 once, last, when the engine is
// ready (its store opened), all on the caller's thread; a non-zero return at any report stops
// the open with CANCELLED and no engine (the sanitizer build checks that nothing leaks).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "parley.h"
#include "support/ggml_blocks.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "text/spm_model_proto.h"

using namespace parley;
using namespace parley::test;

namespace {

struct Reports {
  std::vector<float> fractions;
  std::vector<std::thread::id> threads;
  std::filesystem::path store;       // when set: whether it exists at each report
  std::vector<bool> store_exists;
  size_t stop_at = SIZE_MAX;         // the report (0-based) that asks to stop
  float stop_from = 2.0f;            // or the first report at or past this fraction
};

int record(float fraction, void* user) {
  auto& r = *static_cast<Reports*>(user);
  r.fractions.push_back(fraction);
  r.threads.push_back(std::this_thread::get_id());
  if (!r.store.empty()) r.store_exists.push_back(std::filesystem::exists(r.store));
  return r.fractions.size() - 1 == r.stop_at || fraction >= r.stop_from;
}

parley_status open_reporting(const std::string& model, Reports& reports, parley_engine** out,
                             const std::string& store = "") {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  o.store_path = store.empty() ? nullptr : store.c_str();
  o.n_threads = 1;
  o.on_load_progress = record;
  o.load_progress_user = &reports;
  return parley_engine_open(&o, out);
}

// A whole open's reports: 0 first, 1 last and only there, growing in between, on this thread.
void check_whole_sequence(const Reports& r) {
  REQUIRE(r.fractions.size() >= 2);
  CHECK(r.fractions.front() == 0.0f);
  CHECK(r.fractions.back() == 1.0f);
  for (size_t i = 1; i < r.fractions.size(); ++i) {
    INFO("report " << i << ": " << r.fractions[i - 1] << " then " << r.fractions[i]);
    CHECK(r.fractions[i] > r.fractions[i - 1]);
    if (i + 1 < r.fractions.size()) CHECK(r.fractions[i] < 1.0f);
  }
  for (const std::thread::id& id : r.threads) CHECK(id == std::this_thread::get_id());
}

std::vector<float> whole_open(const std::string& model) {
  Reports r;
  parley_engine* e = nullptr;
  REQUIRE(open_reporting(model, r, &e) == PARLEY_OK);
  REQUIRE(e != nullptr);
  parley_engine_close(e);
  check_whole_sequence(r);
  return r.fractions;
}

SynthSpec spec(model::DType dtype, uint32_t block_type) {
  SynthSpec s;
  s.dim = 256;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.hidden_dim = 512;
  s.n_layers = 3;
  s.n_vocab = 300;
  s.context_length = 64;
  s.dtype = dtype;
  s.block_type = block_type;
  return s;
}

std::string write_gguf_of(const SynthSpec& s, const std::filesystem::path& path) {
  write_gguf(s, make_synth_weights(s), make_spm_vocab(s.n_vocab), path);
  return path.string();
}

}  // namespace

TEST_CASE("engine open: load progress runs from 0 to 1 on the caller's thread, 1 once and last") {
  TempDir tmp;
  SUBCASE("a GGUF file held as it is: about one report per layer") {
    const auto reports = whole_open(write_gguf_of(spec(model::DType::f16, 0), tmp / "f16.gguf"));
    CHECK(reports.size() >= size_t(spec(model::DType::f16, 0).n_layers) + 2);
  }
  SUBCASE("a GGUF file converted at load: its conversion is reported too") {
    const auto held = whole_open(write_gguf_of(spec(model::DType::f16, 0), tmp / "f16.gguf"));
    const SynthSpec q4 = spec(model::DType::f16, ggml_block_type::Q4_K);
    const auto converted = whole_open(write_gguf_of(q4, tmp / "q4_k.gguf"));
    // Each layer has seven matrices in Q4_K, each reported as it is converted.
    CHECK(converted.size() >= held.size() + size_t(q4.n_layers) * 7);
  }
  SUBCASE("a Hugging Face directory") {
    const SynthSpec s = spec(model::DType::bf16, 0);
    const auto tokenizer = tmp / "tokenizer.model";
    std::ofstream(tokenizer, std::ios::binary)
        << text::build_spm_model_proto(gguf_vocab_of(make_spm_vocab(s.n_vocab)));
    write_hf_dir(s, make_synth_weights(s), tmp / "hf", tokenizer);
    const auto reports = whole_open((tmp / "hf").string());
    CHECK(reports.size() >= size_t(s.n_layers) + 2);
  }
  SUBCASE("stories260K, with a store: 1 comes once the store is open") {
    PARLEY_SHARED_OR_SKIP(model, "models/stories260k/stories260k-f32.gguf");
    Reports r;
    r.store = tmp / "chats.db";
    parley_engine* e = nullptr;
    REQUIRE(open_reporting(model.string(), r, &e, r.store.string()) == PARLEY_OK);
    parley_engine_close(e);
    check_whole_sequence(r);
    REQUIRE(r.store_exists.size() == r.fractions.size());
    CHECK(r.store_exists.back());
    CHECK_FALSE(r.store_exists.front());  // the model loads before the store opens
  }
}

TEST_CASE("engine open: a non-zero return from load progress stops it with CANCELLED") {
  TempDir tmp;
  const std::string model =
      write_gguf_of(spec(model::DType::f16, ggml_block_type::Q4_K), tmp / "q4_k.gguf");
  Reports r;
  std::string where;
  SUBCASE("at the first report") {
    r.stop_at = 0;
    where = "first";
  }
  SUBCASE("while the weights are converted") {
    r.stop_at = 2;
    where = "converting";
  }
  SUBCASE("while the backend takes the weights") {
    r.stop_from = 0.75f;
    where = "backend";
  }
  SUBCASE("at 1, the engine and its store ready") {
    r.stop_from = 1.0f;
    where = "ready";
  }
  INFO("stopped " << where << " after " << r.fractions.size() << " reports");
  const std::string store = (tmp / "chats.db").string();
  parley_engine* e = reinterpret_cast<parley_engine*>(&r);  // overwritten with NULL
  CHECK(open_reporting(model, r, &e, store) == PARLEY_E_CANCELLED);
  CHECK(e == nullptr);
  CHECK(std::string(parley_last_error()).find("progress") != std::string::npos);
  // No report follows the one that asked to stop.
  REQUIRE_FALSE(r.fractions.empty());
  if (r.stop_at != SIZE_MAX) {
    CHECK(r.fractions.size() == r.stop_at + 1);
    // Converting reads each block tensor once, the backend then every weight: the
    // conversion's share is below half.
    if (r.stop_at > 0) CHECK(r.fractions.back() < 0.5f);
  } else {
    for (size_t i = 0; i + 1 < r.fractions.size(); ++i) CHECK(r.fractions[i] < r.stop_from);
    CHECK(r.fractions.back() >= r.stop_from);
    if (r.stop_from < 1.0f) CHECK(r.fractions.back() < 1.0f);
  }

  // What the stopped open took is let go: the same store opens and works.
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  o.store_path = store.c_str();
  o.n_threads = 1;
  REQUIRE(parley_engine_open(&o, &e) == PARLEY_OK);
  parley_session* s = nullptr;
  CHECK(parley_session_create(e, nullptr, &s) == PARLEY_OK);
  parley_session_close(s);
  parley_engine_close(e);
}
