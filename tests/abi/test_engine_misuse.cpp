// parley_engine_* with bad arguments: every case returns its documented status with a
// message, sets *out to NULL, and never crashes.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "abi_fixture.h"
#include "support/shared_assets.h"
#include "parley.h"

using namespace parley::test;

namespace {

parley_engine* const kGarbage = reinterpret_cast<parley_engine*>(uintptr_t(0x1234));

parley_status open_with(const parley_engine_options& o, parley_engine** out) {
  *out = kGarbage;
  return parley_engine_open(&o, out);
}

parley_engine_options options_for(const std::string& model) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  return o;
}

}  // namespace

TEST_CASE("engine_open rejects bad options with INVALID_ARGUMENT and NULLs *out") {
  const std::string& model = tiny_chat_model();
  parley_engine* e = nullptr;

  SUBCASE("NULL options or out") {
    e = kGarbage;
    CHECK(parley_engine_open(nullptr, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(e == nullptr);
    auto o = options_for(model);
    CHECK(parley_engine_open(&o, nullptr) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("out"));
  }
  SUBCASE("struct_size 0 or smaller than this version's struct") {
    auto o = options_for(model);
    o.struct_size = 0;
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(e == nullptr);
    CHECK(last_error_mentions("struct_size"));
    o.struct_size = offsetof(parley_engine_options, kv_type);
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("a newer caller's struct: unknown non-zero tail refused, zero tail accepted") {
    struct Newer {
      parley_engine_options v1;
      uint64_t future_field;
    } n{};
    parley_engine_options_init_sized(&n.v1, sizeof n);
    n.v1.model_path = model.c_str();
    n.future_field = 7;
    e = kGarbage;
    CHECK(parley_engine_open(&n.v1, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(e == nullptr);
    CHECK(last_error_mentions("does not know"));
    n.future_field = 0;
    REQUIRE(parley_engine_open(&n.v1, &e) == PARLEY_OK);
    parley_engine_close(e);
  }
  SUBCASE("missing or empty model_path") {
    auto o = options_for(model);
    o.model_path = nullptr;
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    o.model_path = "";
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("model_path"));
  }
  SUBCASE("out-of-range fields") {
    auto o = options_for(model);
    o.kv_type = 9;
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("kv_type"));
    o = options_for(model);
    o.n_threads = -1;
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    o = options_for(model);
    o.device = "tpu";
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("tpu"));
    o.model_path = "/nonexistent/parley/model.gguf";  // the device is read before the model
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("tpu"));
    o = options_for(model);
    o.context_length = 100000;  // the model was trained for 256
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("context_length"));
    CHECK(e == nullptr);
  }
}

TEST_CASE("engine_open reports files and features it cannot serve") {
  parley_engine* e = nullptr;
  auto o = options_for(tiny_chat_model());
  SUBCASE("a path that does not exist") {
    o.model_path = "/nonexistent/parley/model.gguf";
    CHECK(open_with(o, &e) == PARLEY_E_NOT_FOUND);
    CHECK(last_error_mentions("/nonexistent/parley/model.gguf"));
  }
  SUBCASE("a CUDA device that cannot be reached: no module, or no such device") {
    o.device = "cuda:7";
    CHECK(open_with(o, &e) == PARLEY_E_BACKEND);
    CHECK((last_error_mentions("libparley_cuda") || last_error_mentions("device")));
  }
  SUBCASE("a store file that cannot be created") {
    o.store_path = "/nonexistent/dir/sessions.db";
    CHECK(open_with(o, &e) == PARLEY_E_STORAGE);
    CHECK(last_error_mentions("sessions.db"));
  }
  SUBCASE("a store path that is some other file: refused, and left alone") {
    TempDir dir;
    const auto path = dir / "notes.txt";
    std::ofstream(path) << "not a database";
    const std::string p = path.string();
    o.store_path = p.c_str();
    CHECK(open_with(o, &e) == PARLEY_E_CORRUPT);
    CHECK(last_error_mentions("not a Parley store"));
    CHECK(read_file(path) == "not a database");
  }
  SUBCASE("an empty store path") {
    o.store_path = "";
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("SQLite's in-memory name: the store must be a file") {
    o.store_path = ":memory:";
    CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(last_error_mentions("the store must be one"));
  }
  CHECK(e == nullptr);
}

TEST_CASE("closed and NULL engine handles") {
  parley_engine* e = nullptr;
  auto o = options_for(tiny_chat_model());
  REQUIRE(parley_engine_open(&o, &e) == PARLEY_OK);
  parley_engine_close(e);

  parley_engine_stats stats;
  stats.struct_size = sizeof stats;
  CHECK(parley_engine_get_stats(e, &stats) == PARLEY_E_MISUSE);
  CHECK(last_error_mentions("closed"));
  parley_session* s = reinterpret_cast<parley_session*>(uintptr_t(1));
  CHECK(parley_session_create(e, nullptr, &s) == PARLEY_E_MISUSE);
  CHECK(s == nullptr);
  size_t n = 0;
  CHECK(parley_tokenize(e, "a", 1, nullptr, 0, &n) == PARLEY_E_MISUSE);
  CHECK(parley_engine_get_stats(nullptr, &stats) == PARLEY_E_INVALID_ARGUMENT);
  parley_engine_close(nullptr);
}

TEST_CASE("filled structs honour the caller's struct_size") {
  EngineHandle e(tiny_chat_model());
  SUBCASE("too small") {
    parley_engine_stats stats{};
    stats.struct_size = sizeof stats - 8;
    CHECK(parley_engine_get_stats(e, &stats) == PARLEY_E_INVALID_ARGUMENT);
    CHECK(parley_engine_get_stats(e, nullptr) == PARLEY_E_INVALID_ARGUMENT);
  }
  SUBCASE("a newer caller's larger struct: our fields filled, the rest zeroed") {
    std::vector<unsigned char> buf(sizeof(parley_engine_stats) + 16, 0xEE);
    auto* stats = reinterpret_cast<parley_engine_stats*>(buf.data());
    stats->struct_size = buf.size();
    REQUIRE(parley_engine_get_stats(e, stats) == PARLEY_OK);
    CHECK(stats->struct_size == buf.size());
    CHECK(stats->kv_bytes_per_token > 0);
    for (size_t i = sizeof(parley_engine_stats); i < buf.size(); ++i) CHECK(buf[i] == 0);
  }
  SUBCASE("model info") {
    parley_model_info info;
    info.struct_size = sizeof info;
    REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
    CHECK(std::string(info.architecture) == "llama");
    CHECK(info.n_vocab == 320);
    CHECK(info.context_length == 256);
    CHECK(std::string(info.backend) == "cpu");
    CHECK(std::string(info.chat_template) == "raw");
  }
}

TEST_CASE("KV bytes per token follow the documented formula") {
  // tiny_chat_model: 2 layers, 2 KV heads, head_dim 16.
  const uint64_t values = 2ull * 2 * 2 * 16;
  const uint64_t scales = 2ull * 2 * 2;
  const struct {
    int32_t kv_type;
    uint64_t bytes;
  } cases[] = {{PARLEY_KV_DEFAULT, values + 4 * scales},
               {PARLEY_KV_INT8, values + 4 * scales},
               {PARLEY_KV_F16, 2 * values},
               {PARLEY_KV_F32, 4 * values}};
  for (const auto& c : cases) {
    EngineHandle e(tiny_chat_model(), c.kv_type);
    parley_engine_stats stats;
    stats.struct_size = sizeof stats;
    REQUIRE(parley_engine_get_stats(e, &stats) == PARLEY_OK);
    CHECK(stats.kv_bytes_per_token == c.bytes);
  }
}

TEST_CASE("decode steps: a reply of n tokens alone takes n - 1 steps of one token") {
  EngineHandle e(tiny_chat_model());
  SessionHandle s(e);
  auto stats = [&] {
    parley_engine_stats st;
    st.struct_size = sizeof st;
    REQUIRE(parley_engine_get_stats(e, &st) == PARLEY_OK);
    return st;
  };
  CHECK(stats().decode_steps == 0);
  CHECK(stats().decode_tokens == 0);
  // The prompt's prefill yields the first token, and the last one is fed back by the next
  // turn's prefill: only the tokens in between take decode steps.
  const uint32_t n = 9;
  auto g = greedy_options(n);
  REQUIRE(parley_session_send(s, "a", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  CHECK(stats().decode_steps == n - 1);
  CHECK(stats().decode_tokens == n - 1);
  REQUIRE(parley_session_send(s, "b", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  CHECK(stats().decode_steps == 2 * (n - 1));
  CHECK(stats().decode_tokens == 2 * (n - 1));
}

TEST_CASE("the last error survives the getters and names the failing call") {
  parley_engine* e = nullptr;
  CHECK(parley_engine_open(nullptr, &e) == PARLEY_E_INVALID_ARGUMENT);
  const std::string first = parley_last_error();
  CHECK(first.find("parley_engine_open") != std::string::npos);
  (void)parley_status_name(PARLEY_E_BUSY);
  (void)parley_version();
  CHECK(first == parley_last_error());
}

// Paths and names are the caller's bytes: a message quoting them stays one line of UTF-8,
// with what would break it as \xNN.
TEST_CASE("a message quoting a caller's path, device or template stays one line of UTF-8") {
  const std::string bad = "two\nlines\xff";
  parley_engine* e = nullptr;
  const std::string path = "/nonexistent/" + bad + ".gguf";
  auto o = options_for(path);
  CHECK(open_with(o, &e) != PARLEY_OK);
  CHECK(is_one_line_of_utf8(parley_last_error()));
  CHECK(last_error_mentions("two\\x0Alines\\xFF"));

  const std::string& model = tiny_chat_model();
  o = options_for(model);
  o.device = bad.c_str();
  CHECK(open_with(o, &e) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(is_one_line_of_utf8(parley_last_error()));
  CHECK(last_error_mentions("two\\x0Alines\\xFF"));

  o = options_for(model);
  REQUIRE(open_with(o, &e) == PARLEY_OK);
  parley_session_options so;
  parley_session_options_init(&so);
  so.chat_template = bad.c_str();
  parley_session* s = nullptr;
  CHECK(parley_session_create(e, &so, &s) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(is_one_line_of_utf8(parley_last_error()));
  parley_engine_close(e);
}
