#include "synthetic_weights.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "fast_random.h"
#include "common/thread_count.h"
#include "model/fingerprint.h"
#include "synthetic_vocab.h"

namespace parley::bench {
namespace {

using model::DType;

// Values come from a table of evenly spaced quantiles indexed by 12 random bits: one
// generator call yields five values, already in the tensor's storage format.
constexpr int kTableBits = 12;
constexpr size_t kTableSize = size_t(1) << kTableBits;
constexpr size_t kChunkValues = size_t(1) << 20;  // unit of parallel work and of seeding

template <class Fn>
void parallel_for(size_t n, const Fn& fn) {
  const size_t n_threads = std::max<size_t>(1, std::min(n, core_count()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

template <class T>
void fill_from_table(T* dst, size_t n, const std::array<T, kTableSize>& table, uint64_t seed) {
  parallel_for((n + kChunkValues - 1) / kChunkValues, [&](size_t chunk) {
    Xorshift64 rng(seed ^ (chunk * 0x9e3779b97f4a7c15ull));
    constexpr uint64_t kMask = kTableSize - 1;
    const size_t end = std::min(n, (chunk + 1) * kChunkValues);
    size_t i = chunk * kChunkValues;
    for (; i + 5 <= end; i += 5) {
      const uint64_t bits = rng.next();
      dst[i] = table[bits & kMask];
      dst[i + 1] = table[(bits >> 12) & kMask];
      dst[i + 2] = table[(bits >> 24) & kMask];
      dst[i + 3] = table[(bits >> 36) & kMask];
      dst[i + 4] = table[(bits >> 48) & kMask];
    }
    for (uint64_t bits = rng.next(); i < end; ++i, bits >>= kTableBits)
      dst[i] = table[bits & kMask];
  });
}

// Uniform on [lo, hi], stored as `dtype`'s element bits.
template <class T, class Convert>
std::array<T, kTableSize> quantile_table(float lo, float hi, Convert convert) {
  std::array<T, kTableSize> table;
  for (size_t k = 0; k < kTableSize; ++k) {
    table[k] = convert(lo + (hi - lo) * (float(k) + 0.5f) / float(kTableSize));
  }
  return table;
}

// Q8_0 blocks with a fixed scale and uniform int8 values in [-127, 127].
void fill_q8_0(std::byte* dst, size_t n_values, float amplitude, uint64_t seed) {
  const size_t n_blocks = n_values / model::kQ8BlockValues;
  const size_t blocks_per_chunk = kChunkValues / model::kQ8BlockValues;
  const uint16_t d = model::f32_to_f16(amplitude / 127.0f);
  parallel_for((n_blocks + blocks_per_chunk - 1) / blocks_per_chunk, [&](size_t chunk) {
    Xorshift64 rng(seed ^ (chunk * 0x9e3779b97f4a7c15ull));
    const size_t end = std::min(n_blocks, (chunk + 1) * blocks_per_chunk);
    for (size_t b = chunk * blocks_per_chunk; b < end; ++b) {
      model::Q8Block blk;
      blk.d = d;
      for (int i = 0; i < model::kQ8BlockValues; i += 8) {
        uint64_t bits = rng.next();
        for (int k = 0; k < 8; ++k, bits >>= 8) {
          const int8_t q = int8_t(uint8_t(bits & 0xff));
          blk.q[i + k] = q == -128 ? int8_t(-127) : q;
        }
      }
      std::memcpy(dst + b * sizeof(model::Q8Block), &blk, sizeof blk);
    }
  });
}

// Q4_0, Q4_1 or Q5_1 blocks with a fixed scale (and minimum: values from -amplitude to
// amplitude) and uniform 4- or 5-bit codes.
template <class Block>
void fill_nibble_blocks(std::byte* dst, size_t n_values, float amplitude, uint64_t seed) {
  constexpr bool kFifthBits = std::is_same_v<Block, model::Q5_1Block>;
  constexpr bool kMinimum = !std::is_same_v<Block, model::Q4_0Block>;
  const size_t n_blocks = n_values / model::kQ8BlockValues;
  const size_t blocks_per_chunk = kChunkValues / model::kQ8BlockValues;
  const uint16_t d = model::f32_to_f16(kMinimum ? 2.0f * amplitude / (kFifthBits ? 31.0f : 15.0f)
                                                : amplitude / 8.0f);
  const uint16_t m = model::f32_to_f16(-amplitude);
  parallel_for((n_blocks + blocks_per_chunk - 1) / blocks_per_chunk, [&](size_t chunk) {
    Xorshift64 rng(seed ^ (chunk * 0x9e3779b97f4a7c15ull));
    const size_t end = std::min(n_blocks, (chunk + 1) * blocks_per_chunk);
    for (size_t b = chunk * blocks_per_chunk; b < end; ++b) {
      Block blk;
      blk.d = d;
      if constexpr (kMinimum) blk.m = m;
      for (int i = 0; i < model::kQ4BlockBytes; i += 8) {
        const uint64_t bits = rng.next();
        std::memcpy(blk.q + i, &bits, 8);
      }
      if constexpr (kFifthBits) {
        const uint64_t bits = rng.next();
        std::memcpy(blk.qh, &bits, 4);
      }
      std::memcpy(dst + b * sizeof(Block), &blk, sizeof blk);
    }
  });
}

// The type a tensor is stored in: norm vectors (`rows` = 0) in F32; the block types need rows
// of whole 32-value blocks, other matrices fall back to F16 (as llama.cpp's tools do).
DType stored_dtype(DType wanted, int64_t rows, int64_t cols) {
  if (rows == 0) return DType::f32;
  return model::is_blocked(wanted) && cols % model::kQ8BlockValues != 0 ? DType::f16 : wanted;
}

size_t stored_bytes(DType wanted, int64_t rows, int64_t cols) {
  return size_t(rows == 0 ? 1 : rows) *
         model::row_bytes(stored_dtype(wanted, rows, cols), size_t(cols));
}

// Tensors made one after another, filled, each in a buffer of its own (a fresh mapping, whose
// pages the fills touch once), which the model can free once a backend has copied it: `rows`
// = 0 makes a norm vector (F32, around 1).
struct TensorMaker {
  TensorMaker(DType d, uint64_t s) : dtype(d), seed(s) {}
  DType dtype;
  uint64_t seed;
  uint64_t n_made = 0;
  std::vector<model::OwnedBytes> buffers;
  std::vector<model::FileTensor> tensors;

  void make(const std::string& name, int64_t rows, int64_t cols) {
    const bool vector = rows == 0;
    const DType t = stored_dtype(dtype, rows, cols);
    const size_t n = size_t(vector ? 1 : rows) * size_t(cols);
    const size_t n_bytes = stored_bytes(dtype, rows, cols);
    std::byte* data = buffers.emplace_back(n_bytes).data();
    const uint64_t tensor_seed = splitmix64(seed + ++n_made);
    const float a = vector ? 0.1f : std::sqrt(3.0f / float(cols));  // uniform: var = a^2 / 3
    const float lo = vector ? 1.0f - a : -a, hi = vector ? 1.0f + a : a;
    switch (t) {
      case DType::f32:
        fill_from_table(reinterpret_cast<float*>(data), n,
                        quantile_table<float>(lo, hi, [](float x) { return x; }), tensor_seed);
        break;
      case DType::f16:
        fill_from_table(reinterpret_cast<uint16_t*>(data), n,
                        quantile_table<uint16_t>(lo, hi, model::f32_to_f16), tensor_seed);
        break;
      case DType::bf16:
        fill_from_table(reinterpret_cast<uint16_t*>(data), n,
                        quantile_table<uint16_t>(lo, hi, model::f32_to_bf16), tensor_seed);
        break;
      case DType::q8_0:
        fill_q8_0(data, n, a, tensor_seed);
        break;
      case DType::q4_0:
        fill_nibble_blocks<model::Q4_0Block>(data, n, a, tensor_seed);
        break;
      case DType::q4_1:
        fill_nibble_blocks<model::Q4_1Block>(data, n, a, tensor_seed);
        break;
      case DType::q5_1:
        fill_nibble_blocks<model::Q5_1Block>(data, n, a, tensor_seed);
        break;
    }
    std::vector<int64_t> shape =
        vector ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
    tensors.push_back(model::FileTensor{name, t, std::move(shape), data, n_bytes});
  }
};

model::ModelConfig synthetic_config(const SyntheticShape& s) {
  model::ModelConfig c;
  c.name = "synthetic " + std::string(s.name);
  c.n_vocab = s.n_vocab;
  c.dim = s.dim;
  c.hidden_dim = s.hidden_dim;
  c.n_layers = s.n_layers;
  c.n_heads = s.n_heads;
  c.n_kv_heads = s.n_kv_heads;
  c.head_dim = s.dim / s.n_heads;
  c.context_length = s.context_length;
  return c;
}

// Every tensor of the model as (GGUF name, rows, cols); rows = 0 for a norm vector.
template <class Fn>
void for_each_tensor(const model::ModelConfig& c, bool tied_output, const Fn& fn) {
  const int64_t q_rows = int64_t(c.n_heads) * c.head_dim;
  const int64_t kv_rows = int64_t(c.n_kv_heads) * c.head_dim;
  fn("token_embd.weight", c.n_vocab, c.dim);
  for (int32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    fn(p + "attn_norm.weight", 0, c.dim);
    fn(p + "attn_q.weight", q_rows, c.dim);
    fn(p + "attn_k.weight", kv_rows, c.dim);
    fn(p + "attn_v.weight", kv_rows, c.dim);
    fn(p + "attn_output.weight", c.dim, q_rows);
    fn(p + "ffn_norm.weight", 0, c.dim);
    fn(p + "ffn_gate.weight", c.hidden_dim, c.dim);
    fn(p + "ffn_up.weight", c.hidden_dim, c.dim);
    fn(p + "ffn_down.weight", c.dim, c.hidden_dim);
  }
  fn("output_norm.weight", 0, c.dim);
  if (!tied_output) fn("output.weight", c.n_vocab, c.dim);
}

}  // namespace

std::unique_ptr<model::LoadedModel> make_synthetic_model(const SyntheticShape& shape,
                                                         model::DType dtype, uint64_t seed) {
  auto m = std::make_unique<model::LoadedModel>();
  m->config = synthetic_config(shape);
  m->config.validate();
  m->tokenizer.kind = model::TokenizerSource::Kind::gguf_vocab;
  m->tokenizer.vocab = make_synthetic_vocab(shape.n_vocab);

  TensorMaker make{dtype, seed};
  for_each_tensor(m->config, shape.tied_output,
                  [&](const std::string& name, int64_t rows, int64_t cols) {
                    make.make(name, rows, cols);
                  });
  // The loader's own checks (names, shapes, byte counts) vouch for the synthetic tensors too.
  m->weights = model::build_weights(make.tensors, model::TensorNaming::gguf, m->config,
                                    shape.tied_output);
  for (model::OwnedBytes& b : make.buffers) m->weights.owned.push_back(std::move(b));
  m->n_params = model::count_parameters(m->weights);
  m->fingerprint = model::model_fingerprint(m->config, m->tokenizer, m->weights);
  return m;
}

uint64_t synthetic_weight_bytes(const SyntheticShape& shape, model::DType dtype) {
  uint64_t bytes = 0;
  for_each_tensor(synthetic_config(shape), shape.tied_output,
                  [&](const std::string&, int64_t rows, int64_t cols) {
                    bytes += stored_bytes(dtype, rows, cols);
                  });
  return bytes;
}

}  // namespace parley::bench
