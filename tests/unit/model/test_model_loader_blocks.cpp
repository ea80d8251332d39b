// GGUF files whose matrices are in ggml's 4- to 6-bit block types load as Q8_0, Q4_0, Q4_1 or
// Q5_1 holding the values the test-side writer's blocks stand for.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "model/model_loader.h"
#include "support/error_check.h"
#include "support/ggml_blocks.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "support/tensor_codec.h"

using parley::model::DType;
using parley::model::f16_to_f32;
using parley::model::load_model;
using parley::model::Q4_1Block;
using parley::model::Q8Block;
using parley::model::TensorView;
using parley::test::SynthSpec;

namespace {

// Q5_0 values exactly (held as Q5_1); Q4_K's and Q5_K's within F16's rounding of each
// sub-block's scale and minimum (held as Q4_1 and Q5_1); Q6_K's within half a step of each 32
// values' Q8_0 scale.
void check_block_values(const TensorView& v, const std::vector<float>& want, bool exact) {
  CAPTURE(v.name);
  REQUIRE(parley::model::is_blocked(v.dtype));
  REQUIRE(size_t(v.n_elements()) == want.size());
  const std::vector<float> got = parley::test::decode_view(v);
  const auto* q8 = reinterpret_cast<const Q8Block*>(v.data);
  const auto* q4 = reinterpret_cast<const Q4_1Block*>(v.data);
  const auto* q5 = reinterpret_cast<const parley::model::Q5_1Block*>(v.data);
  size_t off = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    float bound = 0.0f;
    if (v.dtype == DType::q8_0) {
      bound = 0.5001f * f16_to_f32(q8[i / 32].d);
    } else if (v.dtype == DType::q4_1) {
      bound = (15.0f * std::fabs(f16_to_f32(q4[i / 32].d)) +
               std::fabs(f16_to_f32(q4[i / 32].m))) * 0x1.0p-11f * 1.001f;
    } else {
      bound = (31.0f * std::fabs(f16_to_f32(q5[i / 32].d)) +
               std::fabs(f16_to_f32(q5[i / 32].m))) * 0x1.0p-11f * 1.001f;
    }
    const bool ok = exact ? got[i] == want[i] : std::fabs(got[i] - want[i]) <= bound;
    if (!ok && off++ == 0) {
      INFO("value " << i << ": " << want[i] << " loaded as " << got[i] << " (bound " << bound
                    << ")");
      CHECK(ok);
    }
  }
  CHECK(off == 0);
}

void check_model(const parley::model::LoadedModel& m, const SynthSpec& spec,
                 const parley::test::SynthWeights& written) {
  const parley::test::SynthWeights want = parley::test::synth_block_values(spec, written);
  auto matrix = [&](const TensorView& v, const std::vector<float>& values, bool output) {
    const uint32_t type = parley::test::synth_matrix_block_type(spec, v.cols, output);
    if (type == 0) {
      CHECK(v.file_blocks == nullptr);
      CHECK(v.dtype == spec.dtype);
      CHECK(parley::test::decode_view(v) == parley::test::round_trip(spec.dtype, values));
      return;
    }
    namespace bt = parley::test::ggml_block_type;
    if (type == bt::Q4_0 || type == bt::Q4_1 || type == bt::Q5_1) {  // held as the file has it
      CHECK(v.file_blocks == nullptr);
      CHECK(v.dtype == (type == bt::Q4_0   ? DType::q4_0
                        : type == bt::Q4_1 ? DType::q4_1
                                           : DType::q5_1));
      CHECK(parley::test::decode_view(v) == values);
      return;
    }
    REQUIRE(v.file_blocks != nullptr);
    CHECK(v.file_blocks->ggml_type == type);
    CHECK(v.dtype == (type == bt::Q4_K                     ? DType::q4_1
                      : type == bt::Q5_K || type == bt::Q5_0 ? DType::q5_1
                                                             : DType::q8_0));
    check_block_values(v, values, type == bt::Q5_0);
  };
  matrix(m.weights.tok_embd, want.tok_embd, false);
  for (size_t l = 0; l < want.layers.size(); ++l) {
    const auto& L = m.weights.layers[l];
    const auto& W = want.layers[l];
    CHECK(parley::test::decode_view(L.attn_norm) == W.attn_norm);
    CHECK(parley::test::decode_view(L.ffn_norm) == W.ffn_norm);
    matrix(L.wq, W.wq, false);
    matrix(L.wk, W.wk, false);
    matrix(L.wv, W.wv, false);
    matrix(L.wo, W.wo, false);
    matrix(L.w_gate, W.w_gate, false);
    matrix(L.w_up, W.w_up, false);
    matrix(L.w_down, W.w_down, false);
  }
  if (!spec.tied) matrix(m.weights.output, want.output, true);
}

SynthSpec block_spec(uint32_t type) {
  SynthSpec s;  // rows of 256 and 512: whole blocks of every type
  s.dim = 256;
  s.hidden_dim = 512;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.block_type = type;
  return s;
}

}  // namespace

TEST_CASE("loader: GGUF matrices in ggml's 4- to 6-bit block types load as Q8_0, Q4_0-Q5_1") {
  parley::test::TempDir dir;
  const auto vocab = parley::test::make_spm_vocab(320);
  for (uint32_t type : parley::test::kGgmlBlockTypes) {
    CAPTURE(parley::test::ggml_block_type_name(type));
    const SynthSpec spec = block_spec(type);
    const auto w = parley::test::make_synth_weights(spec);
    parley::test::write_gguf(spec, w, vocab, dir / "m.gguf");
    check_model(*load_model((dir / "m.gguf").string()), spec, w);
  }
}

TEST_CASE("loader: a mix of block types and a matrix that is not whole blocks, as in Q4_K_M") {
  parley::test::TempDir dir;
  SynthSpec spec = block_spec(parley::test::ggml_block_type::Q4_K);
  spec.output_block_type = parley::test::ggml_block_type::Q6_K;
  spec.hidden_dim = 96;  // ffn_down rows of 96 values stay F16
  spec.dtype = DType::f16;
  const auto w = parley::test::make_synth_weights(spec);
  parley::test::write_gguf(spec, w, parley::test::make_spm_vocab(320), dir / "m.gguf");
  const auto m = load_model((dir / "m.gguf").string());
  CHECK(m->weights.layers[0].w_down.dtype == DType::f16);
  CHECK(m->weights.layers[0].w_gate.dtype == DType::q4_1);
  CHECK(m->weights.output.dtype == DType::q8_0);
  check_model(*m, spec, w);

  SUBCASE("tied output") {
    spec.tied = true;
    const auto tied = parley::test::make_synth_weights(spec);
    parley::test::write_gguf(spec, tied, parley::test::make_spm_vocab(320), dir / "t.gguf");
    const auto t = load_model((dir / "t.gguf").string());
    CHECK(t->weights.tied_output);
    CHECK(t->weights.output.data == t->weights.tok_embd.data);
    check_model(*t, spec, tied);
  }
}

TEST_CASE("loader: a Q4_K or Q5_0 matrix whose held scale or minimum passes F16 is refused") {
  parley::test::TempDir dir;
  namespace bt = parley::test::ggml_block_type;
  // Q4_K: sub-block scales of ~3e6 (values up to 5e7): the super-block's d still fits F16, d
  // times a 6-bit scale does not. Q5_0: values up to 1e6, d = 62500 fits, the minimum -16d not.
  for (const auto& [type, largest] : {std::pair{bt::Q4_K, 5e7f}, std::pair{bt::Q5_0, 1e6f}}) {
    CAPTURE(parley::test::ggml_block_type_name(type));
    const SynthSpec spec = block_spec(type);
    auto w = parley::test::make_synth_weights(spec);
    for (size_t i = 0; i < 32; ++i) w.layers[0].wq[i] = largest * float(i) / 31.0f;
    parley::test::write_gguf(spec, w, parley::test::make_spm_vocab(320), dir / "m.gguf");
    CHECK_PARLEY_ERROR(load_model((dir / "m.gguf").string()), parley::Status::bad_model,
                       "'blk.0.attn_q.weight'", parley::test::ggml_block_type_name(type),
                       "F16's range");
  }
}
