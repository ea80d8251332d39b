#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "support/error_check.h"
#include "model/model_config.h"
#include "support/log_capture.h"

using parley::Status;
using parley::model::ModelConfig;

namespace {

// The stories260K hyperparameters (shared/models/README.md section 2).
ModelConfig stories_like() {
  ModelConfig c;
  c.n_vocab = 512;
  c.dim = 64;
  c.hidden_dim = 172;
  c.n_layers = 5;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.head_dim = 8;
  c.context_length = 512;
  return c;
}

struct BadCase {
  const char* field;
  std::function<void(ModelConfig&)> change;
};

}  // namespace

TEST_CASE("ModelConfig::validate accepts consistent configs") {
  CHECK_NOTHROW(stories_like().validate());
  ModelConfig mqa = stories_like();
  mqa.n_kv_heads = 1;
  mqa.sliding_window = 4096;
  mqa.pad_id = 3;
  CHECK_NOTHROW(mqa.validate());
  ModelConfig wide_heads = stories_like();  // head_dim need not be dim / n_heads when given
  wide_heads.head_dim = 16;
  CHECK_NOTHROW(wide_heads.validate());
}

TEST_CASE("ModelConfig::validate names the first bad field") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const BadCase cases[] = {
      {"architecture", [](ModelConfig& c) { c.architecture = "gpt2"; }},
      {"n_vocab", [](ModelConfig& c) { c.n_vocab = 0; }},
      {"dim", [](ModelConfig& c) { c.dim = -64; }},
      {"hidden_dim", [](ModelConfig& c) { c.hidden_dim = 0; }},
      {"n_layers", [](ModelConfig& c) { c.n_layers = 0; }},
      {"n_heads", [](ModelConfig& c) { c.n_heads = 0; }},
      {"n_kv_heads", [](ModelConfig& c) { c.n_kv_heads = 0; }},
      {"n_kv_heads", [](ModelConfig& c) { c.n_kv_heads = 3; }},   // 8 % 3 != 0
      {"n_kv_heads", [](ModelConfig& c) { c.n_kv_heads = 16; }},  // more KV heads than heads
      {"head_dim", [](ModelConfig& c) { c.head_dim = 0; }},
      {"head_dim", [](ModelConfig& c) { c.head_dim = 7; }},  // RoPE needs pairs
      {"context_length", [](ModelConfig& c) { c.context_length = 0; }},
      {"sliding_window", [](ModelConfig& c) { c.sliding_window = -1; }},
      {"rms_eps", [](ModelConfig& c) { c.rms_eps = 0.0f; }},
      {"rms_eps", [nan](ModelConfig& c) { c.rms_eps = nan; }},
      {"rope_theta", [](ModelConfig& c) { c.rope_theta = -1.0f; }},
      {"rope_theta", [inf](ModelConfig& c) { c.rope_theta = inf; }},
      {"bos_id", [](ModelConfig& c) { c.bos_id = 512; }},
      {"eos_id", [](ModelConfig& c) { c.eos_id = -1; }},
      {"unk_id", [](ModelConfig& c) { c.unk_id = 1000; }},
      {"pad_id", [](ModelConfig& c) { c.pad_id = 512; }},
      {"n_heads * head_dim",
       [](ModelConfig& c) {
         c.n_heads = 1 << 20;
         c.n_kv_heads = 1;
         c.head_dim = 1 << 12;
       }},
  };
  for (const BadCase& bc : cases) {
    CAPTURE(bc.field);
    ModelConfig c = stories_like();
    bc.change(c);
    CHECK_PARLEY_ERROR(c.validate(), Status::bad_model, bc.field);
  }
}

TEST_CASE("pad_id_or_none keeps ids in the vocabulary and drops others with a warning") {
  parley::test::LogCapture log;
  CHECK(parley::model::pad_id_or_none(-1, 512, "f: pad") == -1);
  CHECK(parley::model::pad_id_or_none(0, 512, "f: pad") == 0);
  CHECK(parley::model::pad_id_or_none(511, 512, "f: pad") == 511);
  CHECK(log.text().empty());
  CHECK(parley::model::pad_id_or_none(512, 512, "f: pad") == -1);
  CHECK(log.count("f: pad 512 is outside the vocabulary [0, 512): ignored") == 1);
  CHECK(parley::model::pad_id_or_none(-7, 512, "f: pad") == -1);
  CHECK(log.count("f: pad -7 is outside") == 1);
  // Past int32, as a file's uint32 0xFFFFFFFF: shown as it is, never wrapped to -1.
  CHECK(parley::model::pad_id_or_none(0xFFFFFFFFll, 512, "f: pad") == -1);
  CHECK(log.count("f: pad 4294967295 is outside") == 1);
  CHECK(parley::model::pad_id_or_none((int64_t(1) << 32) + 5, 512, "f: pad") == -1);
  CHECK(log.count("f: pad 4294967301 is outside") == 1);
}
