#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "common/thread_count.h"
#include "kernels/head_dim_dispatch.cuh"
#include "kernels/launch.h"

namespace parley::backend::cuda {
namespace {

size_t act_bytes(int32_t type) { return type == PARLEY_CUDA_F32 ? 4 : 2; }

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

bool supported_head_dim(int32_t hd) {
  return kernels::with_head_dim(hd, [](auto) { return cudaSuccess; }) == cudaSuccess;
}

void check_launch(cudaError_t e, const char* what) { check_cuda(e, what); }

// PARLEY_CUDA_FUSED_DECODE=1: the decode step's fused kernels where the model's shapes allow
// them; "require": fail where they do not. Off by default until measured on a device.
enum class FusedDecode { off, where_fits, required };

FusedDecode fused_decode_from_env() {
  const char* env = std::getenv("PARLEY_CUDA_FUSED_DECODE");
  if (env == nullptr || std::strcmp(env, "0") == 0 || *env == '\0') return FusedDecode::off;
  if (std::strcmp(env, "1") == 0) return FusedDecode::where_fits;
  require(std::strcmp(env, "require") == 0, Status::invalid_argument,
          std::string("PARLEY_CUDA_FUSED_DECODE must be 0, 1 or require, not '") + env + "'");
  return FusedDecode::required;
}

// PARLEY_CUDA_PREFILL_ATTN: the layout of the tensor-core prefill attention (the same sums in
// each): 4 or 8 warps a block, loading the next K/V tile while computing or not. Four warps
// unpipelined by default until the others are measured on a device.
int32_t prefill_variant_from_env() {
  const char* env = std::getenv("PARLEY_CUDA_PREFILL_ATTN");
  const std::string v = env ? env : "";
  if (v.empty() || v == "w4") return kernels::kPrefillFourWarps;
  if (v == "w8") return kernels::kPrefillEightWarps;
  if (v == "w4p") return kernels::kPrefillFourWarpsPipelined;
  if (v == "w8p") return kernels::kPrefillEightWarpsPipelined;
  fail(Status::invalid_argument, "PARLEY_CUDA_PREFILL_ATTN must be w4, w8, w4p or w8p, not '" + v + "'");
}

}  // namespace

CudaBackend::OnDevice::OnDevice(int32_t device) { PARLEY_CUDA(cudaSetDevice(device)); }

CudaBackend::CudaBackend(const parley_cuda_model& m, int32_t device)
    : s_{m.n_vocab, m.dim, m.hidden_dim, m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim,
         m.sliding_window, m.rms_eps, m.rope_theta},
      device_(device),
      use_graphs_(m.use_graphs != 0),
      on_device_(device),
      layer_copied_(std::make_unique<Event[]>(size_t(std::max(m.n_layers, 1)))) {
  require(m.n_vocab > 0 && m.dim > 0 && m.hidden_dim > 0 && m.n_layers > 0 && m.n_heads > 0 &&
              m.n_kv_heads > 0 && m.n_heads % m.n_kv_heads == 0 && m.sliding_window >= 0,
          Status::bad_model, "model hyperparameters do not fit the CUDA backend");
  require(supported_head_dim(m.head_dim), Status::unsupported,
          "the CUDA kernels support head sizes 8, 16, 32, 64, 128 and 256, not " +
              std::to_string(m.head_dim));
  require(m.weight_type == PARLEY_CUDA_WEIGHTS_AUTO || m.weight_type == PARLEY_CUDA_F32 ||
              m.weight_type == PARLEY_CUDA_F16 || m.weight_type == PARLEY_CUDA_BF16,
          Status::invalid_argument, "unknown resident weight type");
  w_ = upload_weights(m, stream_.get());
  gemm_ = std::make_unique<Gemm>(stream_.get());
  int sms = 0;
  PARLEY_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  plan_ = make_decode_plan(sms, m.n_kv_heads);

  const size_t B = kMaxBatch, wt = act_bytes(w_.type);
  x_.reserve(B * s_.dim * 4);
  xn_.reserve(B * s_.dim * wt);
  qkv_.reserve(B * size_t(s_.qkv_width()) * 4);
  att_.reserve(B * size_t(s_.q_dim()) * wt);
  proj_.reserve(B * s_.dim * 4);
  gate_up_.reserve(B * 2 * size_t(s_.hidden) * 4);
  act_.reserve(B * size_t(s_.hidden) * wt);
  logits_.reserve(B * size_t(s_.n_vocab) * 4);
  part_o_.reserve(size_t(plan_.n_splits) * size_t(s_.q_dim()) * 4);
  part_md_.reserve(size_t(plan_.n_splits) * s_.n_heads * 2 * 4);
  prefill_variant_ = prefill_variant_from_env();
  const FusedDecode fused = fused_decode_from_env();
  fused_decode_ = fused != FusedDecode::off && fused_decode_fits();
  require(fused_decode_ || fused != FusedDecode::required, Status::unsupported,
          "the fused decode kernels need F16 or BF16 weights, sizes in multiples of 8 and a model "
          "width of at most " + std::to_string(kernels::kGemvMaxNormedCols));
  if (fused_decode_) {
    merge_counters_.reserve(size_t(s_.n_heads) * sizeof(int32_t));
    PARLEY_CUDA(cudaMemsetAsync(merge_counters_.get(), 0, merge_counters_.bytes(), stream_.get()));
  }
}

kernels::GemvArgs CudaBackend::fused_args(const DeviceMatrix& m, const void* x, const float* norm, void* y,
                                          int32_t output) const {
  return kernels::GemvArgs{m.data, x, y, w_.type, m.rows, m.cols, 1,
                           norm ? kernels::kGemvRmsNormed : kernels::kGemvPlain, norm, s_.eps, output};
}

bool CudaBackend::fused_decode_fits() const {
  const auto fits = [&](const DeviceMatrix& m, const void* x, const float* norm, int32_t output) {
    return kernels::gemv_supports(fused_args(m, x, norm, nullptr, output));
  };
  bool ok = fits(w_.output, x_.get(), w_.output_norm, kernels::kGemvStore);
  for (const ResidentLayer& L : w_.layers) {
    ok = ok && fits(L.wqkv, x_.get(), L.attn_norm, kernels::kGemvStore) &&
         fits(L.wo, att_.get(), nullptr, kernels::kGemvAdd) &&
         fits(L.w_gate_up, x_.get(), L.ffn_norm, kernels::kGemvSwiglu) &&
         fits(L.w_down, act_.get(), nullptr, kernels::kGemvAdd);
  }
  return ok;
}

CudaBackend::~CudaBackend() {
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_.get());
}

void CudaBackend::validate(const parley_cuda_batch& b, const parley_cuda_kv& kv,
                           uint64_t n_logits) const {
  require(b.n_tokens > 0 && b.n_tokens <= kMaxBatch, Status::internal,
          "batch of " + std::to_string(b.n_tokens) + " tokens; max_batch is " +
              std::to_string(kMaxBatch));
  require(kv.n_layers == s_.n_layers && kv.n_kv_heads == s_.n_kv_heads &&
              kv.head_dim == s_.head_dim && kv.kv_type >= kernels::kKvInt8 &&
              kv.kv_type <= kernels::kKvF32,
          Status::internal, "KV cache shape or type does not match the model");
  const kernels::PagedKv geo{nullptr, kv.kv_type, kv.n_layers, kv.n_kv_heads, kv.head_dim};
  require(geo.block_bytes() == kv.block_bytes, Status::internal,
          "KV block layout differs between the host and the CUDA kernels");
  const uint64_t end = uint64_t(b.start_pos) + b.n_tokens;
  require(end <= kv.capacity && kv.n_blocks == (end + 15) / 16, Status::internal,
          "KV block table does not cover positions [0, " + std::to_string(end) + ")");
  const uint64_t rows = b.all_logits ? b.n_tokens : 1;
  require(n_logits == rows * uint64_t(s_.n_vocab), Status::internal, "logits span has the wrong size");
}

KvMirror& CudaBackend::mirror_for(const parley_cuda_kv& kv) {
  auto& m = mirrors_[{kv.kv_type, kv.block_bytes}];
  if (!m) m = std::make_unique<KvMirror>(kv.block_bytes);
  return *m;
}

void CudaBackend::reserve_step(uint32_t max_blocks, size_t staging_bytes, size_t logit_rows) {
  bool moved = false;
  if (max_blocks > table_blocks_) {
    table_blocks_ = max_blocks;
    table_offset_ = align_up(tokens_offset_ + kMaxBatch * sizeof(int32_t), 16);
    step_bytes_ = table_offset_ + size_t(table_blocks_) * sizeof(uint8_t*);
    moved |= step_host_.reserve(step_bytes_);
    moved |= step_dev_.reserve(step_bytes_);
  }
  // Rows kept on the device (write-back) need no staging.
  moved |= staging_dev_.reserve(write_host_ ? staging_bytes : 0);
  moved |= staging_host_.reserve(write_host_ ? staging_bytes : 0);
  moved |= logits_host_.reserve(logit_rows * size_t(s_.n_vocab) * 4);
  if (moved) ++buffers_version_;
}

void CudaBackend::forward(const parley_cuda_batch& b, const parley_cuda_kv& kv, float* logits,
                          uint64_t n_logits) {
  validate(b, kv, n_logits);
  PARLEY_CUDA(cudaSetDevice(device_));
  write_host_ = kv.write_host != 0;
  const int32_t n = int32_t(b.n_tokens);
  const int32_t rows = b.all_logits ? n : 1;
  const kernels::PagedKv geo{nullptr, kv.kv_type, kv.n_layers, kv.n_kv_heads, kv.head_dim};
  const size_t staging_bytes = kernels::KvStaging{nullptr, n}.layer_bytes(geo) * size_t(s_.n_layers);
  // The table covers the sequence's whole capacity so one captured graph serves every step.
  reserve_step((kv.capacity + 15) / 16, staging_bytes, size_t(rows));

  auto* step = step_host_.as<uint8_t>();
  const kernels::StepParams params{int32_t(b.start_pos), n};
  std::memcpy(step, &params, sizeof params);
  std::memcpy(step + tokens_offset_, b.tokens, size_t(n) * sizeof(int32_t));
  auto** table = reinterpret_cast<uint8_t**>(step + table_offset_);
  mirror_for(kv).prepare(kv, b.start_pos, table, stream_.get());

  kernels::PagedKv dkv = geo;
  dkv.blocks = reinterpret_cast<uint8_t* const*>(step_dev_.as<uint8_t>() + table_offset_);
  const StepKey key{kv.kv_type, write_host_, buffers_version_};
  const bool graph_used = use_graphs_ && n == 1 && warmed_key_ == key;
  if (graph_used) {
    if (!graph_.ready() || graph_key_ != key) {
      graph_.capture(stream_.get(), [&] { enqueue(1, 1, dkv, true); });
      graph_key_ = key;
    }
    graph_.launch(stream_.get());
  } else {
    enqueue(n, rows, dkv, false);
    if (n == 1) warmed_key_ = key;
  }
  if (!write_host_) {
    PARLEY_CUDA(cudaStreamSynchronize(stream_.get()));  // the rows stay on the device
  } else if (graph_used) {
    PARLEY_CUDA(cudaStreamSynchronize(stream_.get()));
    for (int32_t l = 0; l < s_.n_layers; ++l) scatter_layer(b, kv, l, 0, 1);
  } else {
    scatter_as_copied(b, kv);
    PARLEY_CUDA(cudaStreamSynchronize(stream_.get()));
  }
  std::memcpy(logits, logits_host_.get(), size_t(rows) * size_t(s_.n_vocab) * sizeof(float));
}

void CudaBackend::download(uint8_t* host_block, uint64_t stamp, int32_t kv_type, uint64_t block_bytes) {
  PARLEY_CUDA(cudaSetDevice(device_));
  const auto it = mirrors_.find({kv_type, block_bytes});
  require(it != mirrors_.end(), Status::internal, "no KV block of this layout is on the device");
  it->second->download(host_block, stamp, stream_.get());
}

void CudaBackend::enqueue(int32_t n, int32_t rows, const kernels::PagedKv& kv, bool graph) {
  cudaStream_t st = stream_.get();
  PARLEY_CUDA(cudaMemcpyAsync(step_dev_.get(), step_host_.get(), step_bytes_,
                              cudaMemcpyHostToDevice, st));
  const auto* tokens = reinterpret_cast<const int32_t*>(step_dev_.as<uint8_t>() + tokens_offset_);
  check_launch(kernels::launch_embed({w_.tok_embd.data, w_.type, tokens, x_.as<float>(), n, s_.dim}, st),
               "launch_embed");
  for (int32_t l = 0; l < s_.n_layers; ++l) enqueue_layer(l, n, kv, graph);

  // Final norm (taking in the last layer's feed-forward output unless the product added it
  // into x already) and logits, for `rows` rows.
  if (fused_step(n)) {
    gemm_->gemv(fused_args(w_.output, x_.get(), w_.output_norm, logits_.get(), kernels::kGemvStore));
  } else {
    const size_t first = size_t(n - rows) * s_.dim;
    kernels::RmsNormArgs norm{x_.as<float>() + first, proj_.as<float>() + first, w_.output_norm,
                              xn_.get(), w_.type, rows, s_.dim, s_.eps};
    check_launch(kernels::launch_rmsnorm(norm, st), "launch_rmsnorm");
    gemm_->linear(w_.output, w_.type, xn_.get(), rows, logits_.as<float>());
  }
  PARLEY_CUDA(cudaMemcpyAsync(logits_host_.get(), logits_.get(),
                              size_t(rows) * s_.n_vocab * sizeof(float), cudaMemcpyDeviceToHost, st));
  if (graph && write_host_) {
    const size_t bytes = kernels::KvStaging{nullptr, n}.layer_bytes(kv) * size_t(s_.n_layers);
    PARLEY_CUDA(cudaMemcpyAsync(staging_host_.get(), staging_dev_.get(), bytes,
                                cudaMemcpyDeviceToHost, st));
  } else if (!graph) {
    PARLEY_CUDA(cudaEventRecord(copied_.get(), copy_stream_.get()));
    PARLEY_CUDA(cudaStreamWaitEvent(st, copied_.get(), 0));
  }
}

void CudaBackend::enqueue_layer(int32_t l, int32_t n, const kernels::PagedKv& kv, bool graph) {
  cudaStream_t st = stream_.get();
  const ResidentLayer& L = w_.layers[size_t(l)];
  const auto* step = reinterpret_cast<const kernels::StepParams*>(step_dev_.get());
  float* x = x_.as<float>();
  float* proj = proj_.as<float>();
  float* qkv = qkv_.as<float>();

  // Fused single-token steps add each block's output into x inside its last product and
  // normalize x inside the product that reads it.
  const bool fused = fused_step(n);

  // Attention block. From layer 1 on, the norm first adds the previous feed-forward output.
  if (fused) {
    gemm_->gemv(fused_args(L.wqkv, x, L.attn_norm, qkv, kernels::kGemvStore));
  } else {
    kernels::RmsNormArgs norm{x, l == 0 ? nullptr : proj, L.attn_norm, xn_.get(), w_.type, n, s_.dim, s_.eps};
    check_launch(kernels::launch_rmsnorm(norm, st), "launch_rmsnorm");
    gemm_->linear(L.wqkv, w_.type, xn_.get(), n, qkv);
  }

  const kernels::KvStaging staging{write_host_ ? staging_dev_.as<uint8_t>() : nullptr, n};
  kernels::RopeKvAppendArgs app{qkv, n, s_.n_heads, l, s_.theta, step, kv, staging};
  check_launch(kernels::launch_rope_kv_append(app, st), "launch_rope_kv_append");
  if (!graph && write_host_) {
    // This layer's new rows go back to the host while the next layers compute.
    const size_t lb = staging.layer_bytes(kv);
    PARLEY_CUDA(cudaEventRecord(appended_.get(), st));
    PARLEY_CUDA(cudaStreamWaitEvent(copy_stream_.get(), appended_.get(), 0));
    PARLEY_CUDA(cudaMemcpyAsync(staging_host_.as<uint8_t>() + size_t(l) * lb,
                                staging_dev_.as<uint8_t>() + size_t(l) * lb, lb,
                                cudaMemcpyDeviceToHost, copy_stream_.get()));
    PARLEY_CUDA(cudaEventRecord(layer_copied_[size_t(l)].get(), copy_stream_.get()));
  }

  if (n == 1) {
    kernels::AttnDecodeArgs dec{qkv, part_o_.as<float>(), part_md_.as<float>(), plan_.n_splits,
                                s_.n_heads, l, s_.window, step, kv};
    if (fused) {
      dec.done_counters = merge_counters_.as<int32_t>();
      dec.out = att_.get();
      dec.out_type = w_.type;
    }
    check_launch(kernels::launch_attn_decode(dec, st), "launch_attn_decode");
    if (!fused) {
      kernels::AttnMergeArgs merge{part_o_.as<float>(), part_md_.as<float>(), att_.get(), w_.type,
                                   plan_.n_splits, s_.n_heads, s_.head_dim};
      check_launch(kernels::launch_attn_merge(merge, st), "launch_attn_merge");
    }
  } else {
    kernels::AttnPrefillArgs pre{qkv, int32_t(s_.qkv_width()), att_.get(), w_.type, n, s_.n_heads,
                                 l, s_.window, step, kv, prefill_variant_};
    check_launch(kernels::launch_attn_prefill(pre, st), "launch_attn_prefill");
  }
  if (fused) {
    gemm_->gemv(fused_args(L.wo, att_.get(), nullptr, x, kernels::kGemvAdd));
    gemm_->gemv(fused_args(L.w_gate_up, x, L.ffn_norm, act_.get(), kernels::kGemvSwiglu));
    gemm_->gemv(fused_args(L.w_down, act_.get(), nullptr, x, kernels::kGemvAdd));
    return;
  }
  gemm_->linear(L.wo, w_.type, att_.get(), n, proj);

  // Feed-forward block: the norm adds the attention output into x first.
  kernels::RmsNormArgs norm2{x, proj, L.ffn_norm, xn_.get(), w_.type, n, s_.dim, s_.eps};
  check_launch(kernels::launch_rmsnorm(norm2, st), "launch_rmsnorm");
  gemm_->linear(L.w_gate_up, w_.type, xn_.get(), n, gate_up_.as<float>());
  kernels::SwigluArgs sw{gate_up_.as<float>(), act_.get(), w_.type, n, s_.hidden};
  check_launch(kernels::launch_swiglu(sw, st), "launch_swiglu");
  gemm_->linear(L.w_down, w_.type, act_.get(), n, proj);
}

void CudaBackend::scatter_as_copied(const parley_cuda_batch& b, const parley_cuda_kv& kv) const {
  // Each layer's rows reach the host while later layers compute, so copying them into the
  // blocks hides behind the device's work. Several threads: blocks the host has not touched
  // yet cost a page fault per page, and faults on different pages proceed in parallel.
  constexpr int32_t kMaxThreads = 8;
  const uint32_t first_block = b.start_pos / kernels::kKvBlockTokens;
  const uint32_t last_block = (b.start_pos + b.n_tokens - 1) / kernels::kKvBlockTokens;
  const auto cores = int32_t(core_count());
  const int32_t parts = std::clamp(std::min(cores / 2, int32_t(last_block - first_block + 1)), 1, kMaxThreads);
  std::vector<cudaError_t> errors(size_t(parts), cudaSuccess);
  auto work = [&](int32_t part) {
    for (int32_t l = 0; l < s_.n_layers; ++l) {
      errors[size_t(part)] = cudaEventSynchronize(layer_copied_[size_t(l)].get());
      if (errors[size_t(part)] != cudaSuccess) return;
      scatter_layer(b, kv, l, part, parts);
    }
  };
  std::vector<std::thread> helpers;
  std::vector<int32_t> own_parts{0};  // this thread's, and those of helpers that did not start
  helpers.reserve(size_t(parts));
  for (int32_t part = 1; part < parts; ++part) {
    try {
      helpers.emplace_back(work, part);
    } catch (const std::system_error&) {
      own_parts.push_back(part);
    }
  }
  for (int32_t part : own_parts) work(part);
  for (auto& t : helpers) t.join();
  for (cudaError_t e : errors) check_cuda(e, "cudaEventSynchronize (KV rows copied to the host)");
}

void CudaBackend::scatter_layer(const parley_cuda_batch& b, const parley_cuda_kv& kv, int32_t l,
                                int32_t part, int32_t parts) const {
  const kernels::PagedKv geo{nullptr, kv.kv_type, kv.n_layers, kv.n_kv_heads, kv.head_dim};
  const kernels::KvStaging st{staging_host_.as<uint8_t>(), int32_t(b.n_tokens)};
  const size_t row = kernels::KvStaging::row_bytes(geo), sc = kernels::KvStaging::scale_bytes(geo);
  // Consecutive positions in one block are consecutive rows both there and in staging: one
  // copy per block and plane rather than one per token.
  for (int32_t t = 0, i = 0; t < int32_t(b.n_tokens); ++i) {
    const uint32_t pos = b.start_pos + uint32_t(t);
    uint8_t* block = kv.host_blocks[pos / kernels::kKvBlockTokens];
    const int slot = int(pos % kernels::kKvBlockTokens);
    const int32_t run = std::min(kernels::kKvBlockTokens - slot, int32_t(b.n_tokens) - t);
    if (i % parts != part) {
      t += run;
      continue;
    }
    std::memcpy(block + geo.k_offset(l, slot, 0), st.base + st.k_row(geo, l, t), size_t(run) * row);
    std::memcpy(block + geo.v_offset(l, slot, 0), st.base + st.v_row(geo, l, t), size_t(run) * row);
    if (sc) {
      std::memcpy(block + geo.k_scale_offset(l, slot, 0), st.base + st.k_scales(geo, l, t), size_t(run) * sc);
      std::memcpy(block + geo.v_scale_offset(l, slot, 0), st.base + st.v_scales(geo, l, t), size_t(run) * sc);
    }
    t += run;
  }
}

}  // namespace parley::backend::cuda
