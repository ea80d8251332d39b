#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_matrix.h"
#include "backend/cpu/matrix_arena.h"
#include "backend/cpu/ops_attention.h"
#include "backend/cpu/ops_matmul.h"
#include "backend/cpu/ops_norm_rope.h"
#include "backend/cpu/thread_pool.h"
#include "common/error.h"
#include "common/memory_room.h"

namespace parley::backend::cpu {
namespace {

// Scratch grows with the largest batch seen; longer inputs are chunked by the caller.
constexpr uint32_t kMaxBatch = 512;

void check_shape(const model::TensorView& t, const std::string& what, int64_t rows, int64_t cols) {
  require(t.data != nullptr, Status::internal, "weight " + what + " is missing");
  require(t.rows == rows && t.cols == cols, Status::internal,
          "weight " + what + " (" + t.name + ") is [" + std::to_string(t.rows) + ", " +
              std::to_string(t.cols) + "], expected [" + std::to_string(rows) + ", " +
              std::to_string(cols) + "]");
  require(!model::is_blocked(t.dtype) || cols % model::kQ8BlockValues == 0, Status::internal,
          "weight " + what + " is " + std::string(model::dtype_name(t.dtype)) + " with rows of " +
              std::to_string(cols) + " values, not a multiple of 32");
}

// Norm weights are tiny: keep them as floats whatever their stored type.
std::vector<float> norm_as_floats(const model::TensorView& t, const std::string& what,
                                  int32_t dim) {
  check_shape(t, what, 1, dim);
  std::vector<float> out(static_cast<size_t>(dim));
  dequantize_row(t, 0, out.data());
  return out;
}

void add_into(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

// Activations of one forward call, [rows of the batch, width] each. Calls on different
// threads each take their own, so sessions run side by side.
struct Workspace {
  std::vector<float> x, xn, q, k, v, att, proj, gate, up;
  std::vector<float> logits;        // [logits rows, n_vocab] of a step of several sequences
  std::vector<uint32_t> row_pos;    // [rows] each row's position in its sequence
  std::vector<kv::KvView*> row_kv;  // [rows] each row's cache
};

// A layer's matrices as the products read them.
struct LayerMatrices {
  CpuMatrix wq, wk, wv, wo, w_gate, w_up, w_down;

  LayerMatrices(const model::LayerWeights& w, ThreadPool& pool, MatrixArena* arena)
      : wq(w.wq, &pool, arena),
        wk(w.wk, &pool, arena),
        wv(w.wv, &pool, arena),
        wo(w.wo, &pool, arena),
        w_gate(w.w_gate, &pool, arena),
        w_up(w.w_up, &pool, arena),
        w_down(w.w_down, &pool, arena) {}

  // The bytes a layer's matrices take in an arena.
  static size_t arena_bytes(const model::LayerWeights& w) {
    size_t bytes = 0;
    for (const model::TensorView* t : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}) {
      bytes += MatrixArena::bytes_for(CpuMatrix::copy_bytes(*t));
    }
    return bytes;
  }
};

struct CpuBackend::Impl {
  model::ModelConfig config;
  const model::Weights& weights;
  const model::TensorView& output_weights;  // the untied matrix, or the embedding when tied
  const bool tied;  // the embedding is looked up in the output matrix's copy
  std::unique_ptr<MatrixArena> arena;  // the matrices' copies; outlives the matrices
  std::vector<LayerMatrices> layers;
  std::unique_ptr<CpuMatrix> output;
  std::vector<std::vector<float>> attn_norm, ffn_norm;  // [n_layers][dim]
  std::vector<float> output_norm;                       // [dim]
  ThreadPool pool;

  std::mutex workspaces_mutex;
  std::vector<std::unique_ptr<Workspace>> idle_workspaces;

  Impl(const model::ModelConfig& c, const model::Weights& w, int32_t n_threads)
      : config(c),
        weights(w),
        output_weights(w.output.empty() ? w.tok_embd : w.output),
        tied(output_weights.data == w.tok_embd.data),
        pool(n_threads) {}

  size_t q_dim() const { return size_t(config.n_heads) * size_t(config.head_dim); }
  size_t kv_dim() const { return size_t(config.n_kv_heads) * size_t(config.head_dim); }

  void validate_model();
  void require_room_for_copies(bool frees_buffers) const;
  void prepare_matrices(const WeightRelease& release, const WeightsTaken& taken,
                        bool frees_buffers);
  void embed(int32_t token, float* out) const;
  void validate_batch(const Batch& batch, const kv::KvView& kv, size_t n_logits) const;
  std::unique_ptr<Workspace> take_workspace(size_t n);
  void return_workspace(std::unique_ptr<Workspace> ws);
  void run_layer(int32_t l, std::span<const SequenceStep> steps, Workspace& ws);
  void compute_logits(std::span<const SequenceStep> steps, Workspace& ws);
};

void CpuBackend::Impl::validate_model() {
  const model::ModelConfig& c = config;
  require(c.n_vocab > 0 && c.dim > 0 && c.hidden_dim > 0 && c.n_layers > 0 && c.n_heads > 0 &&
              c.n_kv_heads > 0 && c.head_dim > 0,
          Status::internal, "model hyperparameters must be positive");
  require(c.n_heads % c.n_kv_heads == 0, Status::internal,
          "n_heads (" + std::to_string(c.n_heads) + ") is not a multiple of n_kv_heads (" +
              std::to_string(c.n_kv_heads) + ")");
  require(c.head_dim % 2 == 0, Status::internal,
          "head_dim must be even for RoPE, got " + std::to_string(c.head_dim));
  require(c.sliding_window >= 0, Status::internal, "sliding_window must not be negative");
  require(weights.layers.size() == size_t(c.n_layers), Status::internal,
          "weights have " + std::to_string(weights.layers.size()) + " layers, config says " +
              std::to_string(c.n_layers));
  const int64_t qd = int64_t(q_dim()), kvd = int64_t(kv_dim());
  check_shape(weights.tok_embd, "tok_embd", c.n_vocab, c.dim);
  for (int32_t l = 0; l < c.n_layers; ++l) {
    const model::LayerWeights& lw = weights.layers[size_t(l)];
    const std::string p = "layer " + std::to_string(l) + " ";
    check_shape(lw.wq, p + "wq", qd, c.dim);
    check_shape(lw.wk, p + "wk", kvd, c.dim);
    check_shape(lw.wv, p + "wv", kvd, c.dim);
    check_shape(lw.wo, p + "wo", c.dim, qd);
    check_shape(lw.w_gate, p + "w_gate", c.hidden_dim, c.dim);
    check_shape(lw.w_up, p + "w_up", c.hidden_dim, c.dim);
    check_shape(lw.w_down, p + "w_down", c.dim, c.hidden_dim);
    attn_norm.push_back(norm_as_floats(lw.attn_norm, p + "attn_norm", c.dim));
    ffn_norm.push_back(norm_as_floats(lw.ffn_norm, p + "ffn_norm", c.dim));
  }
  output_norm = norm_as_floats(weights.output_norm, "output_norm", c.dim);
  check_shape(output_weights, "output", c.n_vocab, c.dim);
}

// The copies need memory beyond what the model holds already. With `frees_buffers`, the
// model's own buffers (converted weights) go as their copies are made, a layer at a time, so
// the most the process holds beyond today is at the end of some layer's copy, before that
// layer's buffers go. An overcommitting kernel would grant the arena and end the process as
// it fills: refused here instead.
void CpuBackend::Impl::require_room_for_copies(bool frees_buffers) const {
  uint64_t copied = 0, freed = 0, most = 0;
  const auto step = [&](uint64_t arena_bytes,
                        std::initializer_list<const model::TensorView*> sources) {
    copied += arena_bytes;
    most = std::max(most, copied > freed ? copied - freed : 0);
    if (!frees_buffers) return;
    for (const model::TensorView* v : sources) {
      if (model::owns_bytes_of(weights, *v)) freed += v->n_bytes;
    }
  };
  for (const model::LayerWeights& lw : weights.layers) {
    step(LayerMatrices::arena_bytes(lw),
         {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down});
  }
  step(MatrixArena::bytes_for(CpuMatrix::copy_bytes(output_weights)), {&output_weights});
  require_memory_room(most, "the CPU backend's copy of the model's weights");
}

// Copies the matrices into the layouts the products read (cpu_matrix.h) a layer at a time,
// each layer's sources (the norms, already floats) released as soon as they are copied, so
// that the process holds its weights about once; `taken` hears of each layer.
void CpuBackend::Impl::prepare_matrices(const WeightRelease& release, const WeightsTaken& taken,
                                        bool frees_buffers) {
  uint64_t bytes_taken = 0;
  const auto took = [&](std::initializer_list<const model::TensorView*> views) {
    for (const model::TensorView* v : views) bytes_taken += v->n_bytes;
    if (taken) taken(bytes_taken);
  };
  size_t arena_bytes = MatrixArena::bytes_for(CpuMatrix::copy_bytes(output_weights));
  for (const model::LayerWeights& lw : weights.layers) {
    arena_bytes += LayerMatrices::arena_bytes(lw);
  }
  require_room_for_copies(frees_buffers);
  arena = std::make_unique<MatrixArena>(arena_bytes);
  layers.reserve(weights.layers.size());
  for (const model::LayerWeights& lw : weights.layers) {
    layers.emplace_back(lw, pool, arena.get());
    const std::initializer_list<const model::TensorView*> views = {
        &lw.attn_norm, &lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.ffn_norm, &lw.w_gate, &lw.w_up,
        &lw.w_down};
    took(views);  // before release() empties them
    if (release) {
      for (const model::TensorView* v : views) release(*v);
    }
  }
  // A tied embedding is looked up in the backend's copy from now on (embed()); an untied one
  // is read where it lies, taken as it is.
  output = std::make_unique<CpuMatrix>(output_weights, &pool, arena.get());
  took({&output_weights, &weights.output_norm});
  if (release) {
    release(output_weights);
    release(weights.output_norm);
  }
  if (!tied) took({&weights.tok_embd});
}

void CpuBackend::Impl::embed(int32_t token, float* out) const {
  if (tied) {
    output->dequantize_row(token, out);
  } else {
    dequantize_row(weights.tok_embd, token, out);
  }
}

void CpuBackend::Impl::validate_batch(const Batch& batch, const kv::KvView& kv,
                                      size_t n_logits) const {
  const size_t n = batch.tokens.size();
  require(n > 0, Status::invalid_argument, "forward() needs at least one token");
  require(
      n <= kMaxBatch, Status::internal,
      "batch of " + std::to_string(n) + " tokens exceeds max_batch " + std::to_string(kMaxBatch));
  const kv::KvShape& s = kv.shape();
  require(s.n_layers == config.n_layers && s.n_kv_heads == config.n_kv_heads &&
              s.head_dim == config.head_dim,
          Status::internal,
          "KV cache shape (layers " + std::to_string(s.n_layers) + ", kv heads " +
              std::to_string(s.n_kv_heads) + ", head dim " + std::to_string(s.head_dim) +
              ") does not match the model");
  require(uint64_t(batch.start_pos) + n <= kv.capacity(), Status::internal,
          "positions [" + std::to_string(batch.start_pos) + ", " +
              std::to_string(uint64_t(batch.start_pos) + n) + ") exceed the KV cache capacity " +
              std::to_string(kv.capacity()));
  const size_t rows = batch.all_logits ? n : 1;
  require(n_logits == rows * size_t(config.n_vocab), Status::internal,
          "logits span holds " + std::to_string(n_logits) + " floats, expected " +
              std::to_string(rows) + " x " + std::to_string(config.n_vocab));
  for (int32_t id : batch.tokens) {
    require(id >= 0 && id < config.n_vocab, Status::invalid_argument,
            "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                std::to_string(config.n_vocab) + ")");
  }
}

std::unique_ptr<Workspace> CpuBackend::Impl::take_workspace(size_t n) {
  std::unique_ptr<Workspace> ws;
  {
    std::lock_guard lock(workspaces_mutex);
    if (!idle_workspaces.empty()) {
      ws = std::move(idle_workspaces.back());
      idle_workspaces.pop_back();
    }
  }
  if (!ws) ws = std::make_unique<Workspace>();
  const size_t dim = size_t(config.dim), hidden = size_t(config.hidden_dim);
  for (auto* buf : {&ws->x, &ws->xn, &ws->proj}) buf->resize(n * dim);
  for (auto* buf : {&ws->q, &ws->att}) buf->resize(n * q_dim());
  for (auto* buf : {&ws->k, &ws->v}) buf->resize(n * kv_dim());
  for (auto* buf : {&ws->gate, &ws->up}) buf->resize(n * hidden);
  ws->row_pos.resize(n);
  ws->row_kv.resize(n);
  return ws;
}

void CpuBackend::Impl::return_workspace(std::unique_ptr<Workspace> ws) {
  std::lock_guard lock(workspaces_mutex);
  idle_workspaces.push_back(std::move(ws));
}

// One transformer block over the rows of every step, x updated in place. Only attention
// looks at which sequence a row belongs to.
void CpuBackend::Impl::run_layer(int32_t l, std::span<const SequenceStep> steps, Workspace& ws) {
  auto &x = ws.x, &xn = ws.xn, &q = ws.q, &k = ws.k, &v = ws.v, &att = ws.att, &proj = ws.proj;
  auto &gate = ws.gate, &up = ws.up;
  const std::vector<uint32_t>& row_pos = ws.row_pos;
  const std::vector<kv::KvView*>& row_kv = ws.row_kv;
  const LayerMatrices& lw = layers[size_t(l)];
  const size_t n = row_pos.size();
  const size_t dim = size_t(config.dim);

  // Attention: norm, projections, RoPE, K/V into the cache, then attend over the cache.
  for (size_t i = 0; i < n; ++i) {
    rmsnorm(&x[i * dim], attn_norm[size_t(l)].data(), dim, config.rms_eps, &xn[i * dim]);
  }
  matmul_many({{&lw.wq, q.data()}, {&lw.wk, k.data()}, {&lw.wv, v.data()}}, xn.data(), n, pool);
  pool.parallel_for(n, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      rope_rows(&q[i * q_dim()], config.n_heads, &k[i * kv_dim()], config.n_kv_heads,
                config.head_dim, row_pos[i], config.rope_theta);
      row_kv[i]->write(l, row_pos[i], &k[i * kv_dim()], &v[i * kv_dim()]);
    }
  });
  size_t first_row = 0;
  for (const SequenceStep& s : steps) {
    AttentionArgs args;
    args.q = &q[first_row * q_dim()];
    args.out = &att[first_row * q_dim()];
    args.n_rows = s.batch.tokens.size();
    args.start_pos = s.batch.start_pos;
    args.layer = l;
    args.n_heads = config.n_heads;
    args.sliding_window = config.sliding_window;
    attention(args, *s.kv, pool);
    first_row += args.n_rows;
  }
  matmul(lw.wo, att.data(), n, proj.data(), pool);
  add_into(x.data(), proj.data(), n * dim);

  // Feed-forward: norm, then gate and up with SwiGLU applied as they come out, then down.
  for (size_t i = 0; i < n; ++i) {
    rmsnorm(&x[i * dim], ffn_norm[size_t(l)].data(), dim, config.rms_eps, &xn[i * dim]);
  }
  matmul_swiglu(lw.w_gate, lw.w_up, xn.data(), n, gate.data(), up.data(), pool);
  matmul(lw.w_down, gate.data(), n, proj.data(), pool);
  add_into(x.data(), proj.data(), n * dim);
}

CpuBackend::CpuBackend(const model::ModelConfig& config, const model::Weights& weights,
                       int32_t n_threads, const WeightRelease& release,
                       const WeightsTaken& taken, bool release_frees_buffers)
    : impl_(std::make_unique<Impl>(config, weights, n_threads)) {
  impl_->validate_model();
  impl_->prepare_matrices(release, taken, release && release_frees_buffers);
}

CpuBackend::~CpuBackend() = default;

uint32_t CpuBackend::max_batch() const { return kMaxBatch; }

uint32_t CpuBackend::max_sequences() const { return kMaxBatch; }

void CpuBackend::forward(const Batch& batch, kv::KvView& kv, std::span<float> logits) {
  const SequenceStep step{batch, &kv, logits};
  forward_many({&step, 1});
}

void CpuBackend::forward_many(std::span<const SequenceStep> steps) {
  Impl& m = *impl_;
  require(!steps.empty(), Status::invalid_argument, "forward_many() needs at least one step");
  size_t n = 0;
  for (const SequenceStep& s : steps) {
    require(s.kv != nullptr, Status::internal, "a step has no KV cache");
    m.validate_batch(s.batch, *s.kv, s.logits.size());
    n += s.batch.tokens.size();
  }
  require(n <= kMaxBatch, Status::internal, [&] {
    return "steps of " + std::to_string(n) + " tokens in all exceed max_batch " +
           std::to_string(kMaxBatch);
  });
  const size_t dim = size_t(m.config.dim);
  auto ws = m.take_workspace(n);

  size_t row = 0;
  for (const SequenceStep& s : steps) {
    for (size_t i = 0; i < s.batch.tokens.size(); ++i, ++row) {
      m.embed(s.batch.tokens[i], &ws->x[row * dim]);
      ws->row_pos[row] = s.batch.start_pos + uint32_t(i);
      ws->row_kv[row] = s.kv;
    }
  }
  for (int32_t l = 0; l < m.config.n_layers; ++l) m.run_layer(l, steps, *ws);
  m.compute_logits(steps, *ws);
  m.return_workspace(std::move(ws));
}

// The final norm and the output product for the rows that want logits, every step's rows in
// one product (the output matrix is read once); a lone step's go straight to its span.
void CpuBackend::Impl::compute_logits(std::span<const SequenceStep> steps, Workspace& ws) {
  const size_t dim = size_t(config.dim), n_vocab = size_t(config.n_vocab);
  size_t row = 0, out_rows = 0;
  for (const SequenceStep& s : steps) {
    const size_t n = s.batch.tokens.size();
    for (size_t i = s.batch.all_logits ? 0 : n - 1; i < n; ++i, ++out_rows) {
      rmsnorm(&ws.x[(row + i) * dim], output_norm.data(), dim, config.rms_eps,
              &ws.xn[out_rows * dim]);
    }
    row += n;
  }
  if (steps.size() == 1) {
    matmul(*output, ws.xn.data(), out_rows, steps[0].logits.data(), pool);
    return;
  }
  ws.logits.resize(out_rows * n_vocab);
  matmul(*output, ws.xn.data(), out_rows, ws.logits.data(), pool);
  const float* from = ws.logits.data();
  for (const SequenceStep& s : steps) {
    std::copy(from, from + s.logits.size(), s.logits.begin());
    from += s.logits.size();
  }
}

}  // namespace parley::backend::cpu
