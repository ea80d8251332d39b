#include "model/weights.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "common/parallel_tasks.h"
#include "common/thread_count.h"
#include "model/unused_tensors.h"

namespace parley::model {

namespace {

struct Names {
  std::string tok_embd, output_norm, output;
  std::string attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;  // with "{}" for the layer
};

Names names_for(TensorNaming naming) {
  if (naming == TensorNaming::gguf) {
    return {"token_embd.weight",       "output_norm.weight",        "output.weight",
            "blk.{}.attn_norm.weight", "blk.{}.attn_q.weight",      "blk.{}.attn_k.weight",
            "blk.{}.attn_v.weight",    "blk.{}.attn_output.weight", "blk.{}.ffn_norm.weight",
            "blk.{}.ffn_gate.weight",  "blk.{}.ffn_up.weight",      "blk.{}.ffn_down.weight"};
  }
  return {"model.embed_tokens.weight",
          "model.norm.weight",
          "lm_head.weight",
          "model.layers.{}.input_layernorm.weight",
          "model.layers.{}.self_attn.q_proj.weight",
          "model.layers.{}.self_attn.k_proj.weight",
          "model.layers.{}.self_attn.v_proj.weight",
          "model.layers.{}.self_attn.o_proj.weight",
          "model.layers.{}.post_attention_layernorm.weight",
          "model.layers.{}.mlp.gate_proj.weight",
          "model.layers.{}.mlp.up_proj.weight",
          "model.layers.{}.mlp.down_proj.weight"};
}

std::string layer_name(const std::string& pattern, int32_t layer) {
  std::string s = pattern;
  s.replace(s.find("{}"), 2, std::to_string(layer));
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t element_alignment(DType t) { return t == DType::f32 ? 4 : 2; }

std::byte* own(Weights& w, size_t n_bytes) {
  w.owned.emplace_back(n_bytes);
  return w.owned.back().data();
}

class Builder {
 public:
  Builder(const std::vector<FileTensor>& tensors, TensorNaming naming, Weights& w,
          const std::function<void(const FileTensor&)>& converted)
      : naming_(naming), w_(w), converted_(converted) {
    for (const FileTensor& t : tensors) by_name_.emplace(t.name, &t);
  }

  const FileTensor* find(const std::string& name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

  // Counts a tensor as used without taking it.
  void pass_over(const std::string& name) { used_.insert(name); }
  const std::unordered_set<std::string>& used() const { return used_; }

  // A matrix [rows, cols], or a vector [cols] when rows == 0.
  TensorView take(const std::string& name, int64_t rows, int64_t cols) {
    const FileTensor* t = find(name);
    if (!t) fail(Status::bad_model, "tensor '" + name + "' is missing");
    used_.insert(name);
    const std::vector<int64_t> want =
        rows ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols};
    if (t->shape != want) {
      const char* order = naming_ == TensorNaming::gguf ? " (GGUF ne reversed)" : "";
      fail(Status::bad_model, "tensor '" + name + "' has shape " + shape_text(t->shape) + order +
                                  ", expected " + shape_text(want));
    }
    TensorView v;
    v.name = t->name;
    v.dtype = t->dtype;
    v.rows = rows ? rows : 1;
    v.cols = cols;
    v.data = t->data;
    v.n_bytes = t->n_bytes;
    // A row's bytes as the file stores them: ggml blocks, or elements of dtype.
    const size_t file_row = t->blocks ? block_row_bytes(*t->blocks, size_t(cols))
                                      : row_bytes(v.dtype, size_t(cols));
    const bool whole_blocks = !t->blocks || size_t(cols) % t->blocks->block_values == 0;
    if (!whole_blocks || v.n_bytes != size_t(v.rows) * file_row) {
      fail(Status::bad_model, "tensor '" + name + "' holds " + std::to_string(v.n_bytes) +
                                  " bytes, its shape needs " +
                                  std::to_string(size_t(v.rows) * file_row) +
                                  (t->blocks ? " as " + std::string(t->blocks->name) : ""));
    }
    if (t->blocks) return converted(*t, v, file_row);
    if (reinterpret_cast<uintptr_t>(v.data) % element_alignment(v.dtype) != 0) {
      // Formats do not promise aligned tensor data; consumers may load elements directly.
      std::byte* copy = own(w_, v.n_bytes);
      std::memcpy(copy, v.data, v.n_bytes);
      v.data = copy;
    }
    return v;
  }

  // The file's 4- to 6-bit blocks (rows of file_row bytes, checked by take()) as blocks of
  // their held type (Q8_0, Q4_1 or Q5_1) the weights own, the rows shared out among the cores
  // (a 7B model's 6.7e9 values take seconds on one).
  TensorView converted(const FileTensor& t, TensorView v, size_t file_row) {
    const size_t cols = size_t(v.cols);
    const size_t held_row = row_bytes(t.blocks->held, cols);
    v.n_bytes = size_t(v.rows) * held_row;
    std::byte* out = own(w_, v.n_bytes);
    constexpr size_t kRowsPerTask = 64;
    const size_t rows = size_t(v.rows);
    const size_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
    std::atomic<bool> in_range{true};
    const auto failures = run_tasks(tasks, core_count(), [&](size_t i) {
      for (size_t r = i * kRowsPerTask; r < std::min(rows, (i + 1) * kRowsPerTask); ++r) {
        if (!convert_row(*t.blocks, t.data + r * file_row, cols, out + r * held_row)) {
          in_range = false;
        }
      }
    });
    for (const std::exception_ptr& e : failures) {
      if (e) std::rethrow_exception(e);
    }
    if (!in_range) {
      fail(Status::bad_model, "tensor '" + t.name + "' (" + std::string(t.blocks->name) +
                                  ") has a block whose values need a scale or minimum "
                                  "beyond F16's range, which " +
                                  std::string(dtype_name(t.blocks->held)) + " cannot hold");
    }
    v.data = out;
    v.file_blocks = t.blocks;
    if (converted_) converted_(t);
    return v;
  }

  // Norm vectors are small; keeping them F32 spares every backend three code paths.
  TensorView take_norm(const std::string& name, int64_t dim) {
    TensorView v = take(name, 0, dim);
    if (v.dtype == DType::f32) return v;
    std::byte* out = own(w_, size_t(dim) * 4);
    std::vector<float> values(static_cast<size_t>(dim));
    dequantize(v.dtype, v.data, size_t(dim), values.data());
    std::memcpy(out, values.data(), values.size() * 4);
    v.dtype = DType::f32;
    v.data = out;
    v.n_bytes = size_t(dim) * 4;
    return v;
  }

  // Hugging Face keeps q/k rows in rotate-half order: HF row h*hd + t*hd/2 + j holds the
  // interleaved (Meta) row h*hd + 2j + t. Rewrite them into interleaved order.
  void unpermute_rows(TensorView& v, int32_t n_heads, int32_t head_dim) {
    const size_t rb = row_bytes(v.dtype, size_t(v.cols));
    std::byte* out = own(w_, v.n_bytes);
    const int32_t half = head_dim / 2;
    for (int32_t h = 0; h < n_heads; ++h) {
      for (int32_t t = 0; t < 2; ++t) {
        for (int32_t j = 0; j < half; ++j) {
          const size_t meta_row = size_t(h) * size_t(head_dim) + size_t(2 * j + t);
          const size_t hf_row = size_t(h) * size_t(head_dim) + size_t(t * half + j);
          std::memcpy(out + meta_row * rb, v.data + hf_row * rb, rb);
        }
      }
    }
    v.data = out;
  }

 private:
  TensorNaming naming_;
  Weights& w_;
  const std::function<void(const FileTensor&)>& converted_;
  std::unordered_map<std::string, const FileTensor*> by_name_;
  std::unordered_set<std::string> used_;
};

}  // namespace

bool owns_bytes_of(const Weights& weights, const TensorView& view) {
  return view.data != nullptr &&
         std::any_of(weights.owned.begin(), weights.owned.end(), [&](const OwnedBytes& b) {
           return b.data() == view.data && b.size() == view.n_bytes;
         });
}

Weights build_weights(const std::vector<FileTensor>& tensors, TensorNaming naming,
                      const ModelConfig& c, bool tie_output,
                      const std::function<void(const FileTensor&)>& converted) {
  Weights w;
  Builder b(tensors, naming, w, converted);
  const Names n = names_for(naming);
  const int64_t q_rows = int64_t(c.n_heads) * c.head_dim;
  const int64_t kv_rows = int64_t(c.n_kv_heads) * c.head_dim;

  w.tok_embd = b.take(n.tok_embd, c.n_vocab, c.dim);
  // Grown layer by layer: a corrupt n_layers fails at the first missing tensor instead of
  // allocating for layers the file does not have.
  for (int32_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers.emplace_back();
    L.attn_norm = b.take_norm(layer_name(n.attn_norm, l), c.dim);
    L.wq = b.take(layer_name(n.wq, l), q_rows, c.dim);
    L.wk = b.take(layer_name(n.wk, l), kv_rows, c.dim);
    L.wv = b.take(layer_name(n.wv, l), kv_rows, c.dim);
    L.wo = b.take(layer_name(n.wo, l), c.dim, q_rows);
    L.ffn_norm = b.take_norm(layer_name(n.ffn_norm, l), c.dim);
    L.w_gate = b.take(layer_name(n.w_gate, l), c.hidden_dim, c.dim);
    L.w_up = b.take(layer_name(n.w_up, l), c.hidden_dim, c.dim);
    L.w_down = b.take(layer_name(n.w_down, l), c.dim, c.hidden_dim);
    if (naming == TensorNaming::hugging_face) {
      b.unpermute_rows(L.wq, c.n_heads, c.head_dim);
      b.unpermute_rows(L.wk, c.n_kv_heads, c.head_dim);
    }
  }
  w.output_norm = b.take_norm(n.output_norm, c.dim);
  w.tied_output = tie_output || b.find(n.output) == nullptr;
  w.output = w.tied_output ? w.tok_embd : b.take(n.output, c.n_vocab, c.dim);
  // Tied by the config, an output matrix the file holds anyway is overridden, as transformers
  // overrides it.
  if (w.tied_output && b.find(n.output)) b.pass_over(n.output);
  check_every_tensor_used(tensors, b.used(), naming, c);
  return w;
}

OwnedBytes::OwnedBytes(size_t size) : bytes_(nullptr, Unmap{size}) {
  void* p = mmap(nullptr, std::max<size_t>(size, 1), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  bytes_.reset(static_cast<std::byte*>(p));
}

void OwnedBytes::Unmap::operator()(std::byte* p) const { munmap(p, std::max<size_t>(size, 1)); }

uint64_t count_parameters(const Weights& w) {
  uint64_t n = uint64_t(w.tok_embd.n_elements()) + uint64_t(w.output_norm.n_elements());
  for (const LayerWeights& L : w.layers) {
    for (const TensorView* v :
         {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.w_gate, &L.w_up, &L.w_down}) {
      n += uint64_t(v->n_elements());
    }
  }
  if (!w.tied_output) n += uint64_t(w.output.n_elements());
  return n;
}

std::vector<TensorView*> weight_views(Weights& w) {
  std::vector<TensorView*> views{&w.tok_embd};
  for (LayerWeights& L : w.layers) {
    views.insert(views.end(), {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.w_gate,
                               &L.w_up, &L.w_down});
  }
  views.insert(views.end(), {&w.output_norm, &w.output});
  return views;
}

std::vector<const TensorView*> weight_views(const Weights& w) {
  const std::vector<TensorView*> views = weight_views(const_cast<Weights&>(w));  // read only
  return {views.begin(), views.end()};
}

}  // namespace parley::model
