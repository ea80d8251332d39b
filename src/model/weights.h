// Typed, shaped views of a model's weights. Views point into memory-mapped files or into
// buffers the Weights own (tensors rewritten at load, such as HF q/k rows). Once a backend has
// copied a weight, the model may let its bytes go (weight_release.h): the view is then empty,
// its data null and its shape kept.
// Guarantees after build_weights(): every view's data is aligned to its element type (4 bytes
// for F32, 2 for F16/BF16/Q8_0/Q4_1), and the norm vectors are F32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/ggml_quants.h"
#include "model/model_config.h"

namespace parley::model {

// A matrix [rows, cols] stored row-major (rows = out_features, cols = in_features), or a
// vector (rows = 1). GGUF's ne = [cols, rows]; safetensors' shape = [rows, cols].
struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  int64_t rows = 0;
  int64_t cols = 0;
  const std::byte* data = nullptr;  // rows * row_bytes(dtype, cols) bytes
  size_t n_bytes = 0;
  const GgmlBlockType* file_blocks = nullptr;  // the file's ggml blocks it was converted from

  bool empty() const { return data == nullptr; }
  int64_t n_elements() const { return rows * cols; }
  const std::byte* row(int64_t r) const { return data + size_t(r) * row_bytes(dtype, size_t(cols)); }
};

struct LayerWeights {
  TensorView attn_norm;  // [1, dim]
  TensorView wq;         // [n_heads * head_dim, dim]; rows in interleaved (Meta/GGUF) RoPE order
  TensorView wk;         // [n_kv_heads * head_dim, dim]; same order as wq
  TensorView wv;         // [n_kv_heads * head_dim, dim]
  TensorView wo;         // [dim, n_heads * head_dim]
  TensorView ffn_norm;   // [1, dim]
  TensorView w_gate;     // [hidden_dim, dim]
  TensorView w_up;       // [hidden_dim, dim]
  TensorView w_down;     // [dim, hidden_dim]
};

// A zero-filled buffer the weights own, behind views that are not in a mapped file. It is a
// mapping of its own, so that freeing it gives the memory back to the system at once, whatever
// the allocator's thresholds. Page-aligned. Throws std::bad_alloc.
class OwnedBytes {
 public:
  explicit OwnedBytes(size_t size);
  std::byte* data() const { return bytes_.get(); }
  size_t size() const { return bytes_.get_deleter().size; }

 private:
  struct Unmap {
    size_t size = 0;
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Unmap> bytes_;
};

struct Weights {
  TensorView tok_embd;     // [n_vocab, dim]
  std::vector<LayerWeights> layers;
  TensorView output_norm;  // [1, dim]
  TensorView output;       // [n_vocab, dim]; the same bytes as tok_embd when tied
  bool tied_output = false;

  // Buffers behind views that are not in a mapped file.
  std::vector<OwnedBytes> owned;
};

// Whether `view`'s bytes are a buffer the weights own (a tensor converted or rewritten at
// load, which release_weight_bytes frees) rather than a file's pages.
bool owns_bytes_of(const Weights& weights, const TensorView& view);

// Every view of `weights`: tok_embd, each layer's in declaration order, output_norm, output.
std::vector<TensorView*> weight_views(Weights& weights);
std::vector<const TensorView*> weight_views(const Weights& weights);

// A tensor as a file lists it, before it is given a role and checked against the config.
struct FileTensor {
  std::string name;
  DType dtype = DType::f32;  // the type it is held in once loaded
  std::vector<int64_t> shape;  // outermost first: [rows, cols] for a matrix, [n] for a vector
  const std::byte* data = nullptr;
  size_t n_bytes = 0;
  const GgmlBlockType* blocks = nullptr;  // set when the file's ggml blocks are converted
};

enum class TensorNaming {
  gguf,          // token_embd.weight, blk.N.attn_q.weight, ...; q/k rows in interleaved order
  hugging_face,  // model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ...;
                 // q/k rows in rotate-half order (un-permuted here into owned buffers)
};

// Gives every tensor the model needs its role, checking its shape against `config` (which
// must be validate()d). The output matrix is tied to the token embedding when
// `tie_output` is set (an output matrix in the file is then passed over, as transformers does)
// or the file has none. Throws Error(bad_model) naming a missing or misshapen tensor, or one the
// model would not use (unused_tensors.h). `converted`, when given, is called for each tensor of
// ggml blocks once its converted copy is made, so that the caller can let go of the source
// bytes before the next tensor is converted.
Weights build_weights(const std::vector<FileTensor>& tensors, TensorNaming naming,
                      const ModelConfig& config, bool tie_output,
                      const std::function<void(const FileTensor&)>& converted = {});

// Parameters the model computes with (a tied output matrix counts once).
uint64_t count_parameters(const Weights& weights);

}  // namespace parley::model
