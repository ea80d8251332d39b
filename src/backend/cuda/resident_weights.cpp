#include "backend/cuda/resident_weights.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "kernels/launch.h"

namespace parley::backend::cuda {
namespace {

size_t elem_bytes(int32_t type) { return type == PARLEY_CUDA_F32 ? 4 : 2; }

size_t raw_bytes(const parley_cuda_tensor& t) {
  switch (t.dtype) {
    case PARLEY_CUDA_F32: return size_t(t.rows * t.cols) * 4;
    case PARLEY_CUDA_F16:
    case PARLEY_CUDA_BF16: return size_t(t.rows * t.cols) * 2;
    case PARLEY_CUDA_Q8_0: return size_t(t.rows) * size_t(t.cols / 32) * 34;
    case PARLEY_CUDA_Q4_1: return size_t(t.rows) * size_t(t.cols / 32) * 20;
    case PARLEY_CUDA_Q5_1: return size_t(t.rows) * size_t(t.cols / 32) * 24;
    case PARLEY_CUDA_Q4_0: return size_t(t.rows) * size_t(t.cols / 32) * 18;
  }
  return 0;
}

void check_tensor(const parley_cuda_tensor& t, const std::string& what, int64_t rows, int64_t cols) {
  require(t.data != nullptr, Status::bad_model, "weight " + what + " is missing");
  require(t.rows == rows && t.cols == cols, Status::bad_model,
          "weight " + what + " is [" + std::to_string(t.rows) + ", " + std::to_string(t.cols) +
              "], expected [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  require(t.dtype >= PARLEY_CUDA_F32 && t.dtype <= PARLEY_CUDA_Q4_0, Status::bad_model,
          "weight " + what + " has an unknown element type");
  require(t.dtype < PARLEY_CUDA_Q8_0 || cols % 32 == 0, Status::bad_model,
          "weight " + what + " is in blocks of 32 with rows not a multiple of 32");
  require(t.n_bytes >= raw_bytes(t), Status::bad_model, "weight " + what + " is truncated");
}

class Uploader {
 public:
  Uploader(ResidentWeights& w, cudaStream_t stream) : w_(w), stream_(stream) {}

  // A device matrix of `rows` rows made of the given tensors stacked in order.
  DeviceMatrix stack(std::initializer_list<const parley_cuda_tensor*> parts, int32_t type) {
    int64_t rows = 0;
    for (const auto* p : parts) rows += p->rows;
    const int64_t cols = (*parts.begin())->cols;
    DeviceBuffer buf(size_t(rows * cols) * elem_bytes(type));
    int64_t row = 0;
    for (const auto* p : parts) {
      convert_into(*p, static_cast<char*>(buf.get()) + size_t(row * cols) * elem_bytes(type), type);
      row += p->rows;
    }
    DeviceMatrix m{buf.get(), rows, cols};
    w_.bytes += buf.bytes();
    w_.owned.push_back(std::move(buf));
    return m;
  }

  const float* vector(const parley_cuda_tensor& t) {
    return static_cast<const float*>(stack({&t}, PARLEY_CUDA_F32).data);
  }

 private:
  void convert_into(const parley_cuda_tensor& t, void* dst, int32_t type) {
    const size_t n = raw_bytes(t);
    raw_.reserve(n);
    // Pageable source: the copy has completed when the call returns.
    PARLEY_CUDA(cudaMemcpyAsync(raw_.get(), t.data, n, cudaMemcpyHostToDevice, stream_));
    kernels::ConvertArgs a{raw_.get(), t.dtype, dst, type, t.rows, t.cols};
    PARLEY_CUDA(kernels::launch_convert(a, stream_));
    PARLEY_CUDA(cudaStreamSynchronize(stream_));  // raw_ is reused by the next tensor
  }

  ResidentWeights& w_;
  cudaStream_t stream_;
  DeviceBuffer raw_;
};

// A part of the model is on the device: the host hears of it, and may stop the upload.
void report_uploaded(const parley_cuda_model& m,
                     std::initializer_list<const parley_cuda_tensor*> parts) {
  if (!m.uploaded) return;
  uint64_t bytes = 0;
  for (const parley_cuda_tensor* t : parts) bytes += t->n_bytes;
  if (m.uploaded(bytes, m.uploaded_user) != 0) {
    parley::fail(parley::Status::cancelled, "the upload of the weights was stopped");
  }
}

}  // namespace

int32_t resident_type(const parley_cuda_model& m) {
  if (m.weight_type != PARLEY_CUDA_WEIGHTS_AUTO) return m.weight_type;
  const int32_t file_type = m.n_layers > 0 ? m.layers[0].wq.dtype : m.tok_embd.dtype;
  return file_type == PARLEY_CUDA_BF16 ? PARLEY_CUDA_BF16 : PARLEY_CUDA_F16;
}

ResidentWeights upload_weights(const parley_cuda_model& m, cudaStream_t stream) {
  const int64_t dim = m.dim, qd = int64_t(m.n_heads) * m.head_dim;
  const int64_t kvd = int64_t(m.n_kv_heads) * m.head_dim, hidden = m.hidden_dim;
  check_tensor(m.tok_embd, "tok_embd", m.n_vocab, dim);
  check_tensor(m.output, "output", m.n_vocab, dim);
  check_tensor(m.output_norm, "output_norm", 1, dim);
  for (int32_t l = 0; l < m.n_layers; ++l) {
    const parley_cuda_layer& L = m.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    check_tensor(L.attn_norm, p + "attn_norm", 1, dim);
    check_tensor(L.ffn_norm, p + "ffn_norm", 1, dim);
    check_tensor(L.wq, p + "wq", qd, dim);
    check_tensor(L.wk, p + "wk", kvd, dim);
    check_tensor(L.wv, p + "wv", kvd, dim);
    check_tensor(L.wo, p + "wo", dim, qd);
    check_tensor(L.w_gate, p + "w_gate", hidden, dim);
    check_tensor(L.w_up, p + "w_up", hidden, dim);
    check_tensor(L.w_down, p + "w_down", dim, hidden);
  }

  ResidentWeights w;
  w.type = resident_type(m);
  Uploader up(w, stream);
  w.tok_embd = up.stack({&m.tok_embd}, w.type);
  w.output = m.output.data == m.tok_embd.data ? w.tok_embd : up.stack({&m.output}, w.type);
  w.output_norm = up.vector(m.output_norm);
  if (m.output.data == m.tok_embd.data) {
    report_uploaded(m, {&m.tok_embd, &m.output_norm});
  } else {
    report_uploaded(m, {&m.tok_embd, &m.output, &m.output_norm});
  }
  for (int32_t l = 0; l < m.n_layers; ++l) {
    const parley_cuda_layer& L = m.layers[l];
    ResidentLayer r;
    r.wqkv = up.stack({&L.wq, &L.wk, &L.wv}, w.type);
    r.wo = up.stack({&L.wo}, w.type);
    r.w_gate_up = up.stack({&L.w_gate, &L.w_up}, w.type);
    r.w_down = up.stack({&L.w_down}, w.type);
    r.attn_norm = up.vector(L.attn_norm);
    r.ffn_norm = up.vector(L.ffn_norm);
    w.layers.push_back(r);
    report_uploaded(m, {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.w_gate,
                        &L.w_up, &L.w_down});
  }
  return w;
}

}  // namespace parley::backend::cuda
