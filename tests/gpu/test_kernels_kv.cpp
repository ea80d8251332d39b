// The kernels that touch the paged cache against the CPU backend: RoPE + append (INT8/F16/F32
// blocks and the staging rows), prefill attention and split-KV decode attention + merge, over
// random caches of awkward lengths, GQA/MQA/MHA, head sizes 8, 64 and 128, sliding windows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/ops_attention.h"
#include "backend/cpu/ops_norm_rope.h"
#include "backend/cpu/thread_pool.h"
#include "gpu_test_util.h"
#include "kernels/launch.h"
#include "kv/kv_cache.h"
#include "model/dtype.h"

using namespace parley;
using namespace parley::test;

namespace {

struct Heads {
  int32_t n_heads, n_kv_heads, head_dim;
};

// A device copy of a host cache's blocks (same layout), with its pointer table.
class DeviceCache {
 public:
  DeviceCache(kv::KvCache& host, uint32_t positions)
      : host_(host),
        n_blocks_((positions + 15) / 16),
        bytes_(host.view().layout().block_bytes()),
        blocks_(bytes_ * n_blocks_),
        table_(n_blocks_ * sizeof(void*)) {
    std::vector<uint8_t*> ptrs(n_blocks_);
    for (uint32_t i = 0; i < n_blocks_; ++i) ptrs[i] = blocks_.as<uint8_t>() + i * bytes_;
    table_.upload(ptrs.data(), ptrs.size() * sizeof(void*));
  }
  void upload() {
    for (uint32_t i = 0; i < n_blocks_; ++i) {
      check_cuda_ok(cudaMemcpy(blocks_.as<uint8_t>() + i * bytes_, host_block(i), bytes_,
                               cudaMemcpyHostToDevice));
    }
  }
  std::vector<uint8_t> block(uint32_t i) const {
    std::vector<uint8_t> out(bytes_);
    check_cuda_ok(cudaMemcpy(out.data(), blocks_.as<uint8_t>() + i * bytes_, bytes_, cudaMemcpyDeviceToHost));
    return out;
  }
  const uint8_t* host_block(uint32_t i) const {
    return reinterpret_cast<const uint8_t*>(host_.view().pool().data(host_.view().block_ids()[i]));
  }
  kernels::PagedKv paged() const {
    const kv::KvShape& s = host_.shape();
    return kernels::PagedKv{table_.as<uint8_t*>(), int32_t(host_.type()), s.n_layers, s.n_kv_heads, s.head_dim};
  }
  bool guards_intact() const { return blocks_.guards_intact() && table_.guards_intact(); }

 private:
  kv::KvCache& host_;
  uint32_t n_blocks_;
  size_t bytes_;
  GuardedBuffer blocks_, table_;
};

std::unique_ptr<GuardedBuffer> step_buffer(int32_t start, int32_t n) {
  auto b = std::make_unique<GuardedBuffer>(sizeof(kernels::StepParams));
  const kernels::StepParams p{start, n};
  b->upload(&p, sizeof p);
  return b;
}

// Fills positions [0, end) of layer `layer` of a host cache with random K/V.
void fill_cache(kv::KvCache& cache, int32_t layer, uint32_t end, uint32_t seed) {
  const size_t row = size_t(cache.shape().row());
  const auto k = random_floats(row * end, seed, 1.5f), v = random_floats(row * end, seed + 1);
  for (uint32_t p = 0; p < end; ++p) cache.write(layer, p, &k[p * row], &v[p * row]);
}

}  // namespace

TEST_CASE("rope_kv_append: rotated q/k, and K/V bytes and scales as the CPU writes them") {
  PARLEY_GPU_OR_SKIP();
  for (Heads h : {Heads{6, 2, 8}, Heads{4, 4, 64}, Heads{8, 1, 128}}) {
    for (kv::KvType type : {kv::KvType::int8, kv::KvType::f16, kv::KvType::f32}) {
      for (auto [start, n] : {std::pair{0, 1}, std::pair{13, 5}, std::pair{50, 37}}) {
        CAPTURE(h.head_dim);
        CAPTURE(int(type));
        CAPTURE(start);
        CAPTURE(n);
        const int32_t layers = 2, layer = 1;
        const int32_t width = (h.n_heads + 2 * h.n_kv_heads) * h.head_dim;
        const uint32_t end = uint32_t(start + n);
        kv::KvCache cpu(type, kv::KvShape{layers, h.n_kv_heads, h.head_dim}, end);
        const auto qkv = random_floats(size_t(n) * width, uint32_t(start + n + h.head_dim), 2.0f);

        // CPU: rope_rows on q and k, then KvView::write of k and v.
        std::vector<float> want = qkv;
        const size_t qd = size_t(h.n_heads) * h.head_dim, kvd = size_t(h.n_kv_heads) * h.head_dim;
        for (int32_t t = 0; t < n; ++t) {
          float* row = &want[size_t(t) * width];
          backend::cpu::rope_rows(row, h.n_heads, row + qd, h.n_kv_heads, h.head_dim,
                                  uint32_t(start + t), 10000.0f);
          cpu.write(layer, uint32_t(start + t), row + qd, row + qd + kvd);
        }

        DeviceCache dev(cpu, end);
        GuardedBuffer dqkv(qkv.size() * 4);
        const auto step = step_buffer(start, n);
        const kernels::PagedKv paged = dev.paged();
        const size_t staging_bytes = kernels::KvStaging{nullptr, n}.layer_bytes(paged) * layers;
        GuardedBuffer staging(staging_bytes);
        dqkv.upload(qkv.data(), qkv.size() * 4);
        kernels::RopeKvAppendArgs a{dqkv.as<float>(), n, h.n_heads, layer, 10000.0f,
                                    step->as<kernels::StepParams>(), paged,
                                    kernels::KvStaging{staging.as<uint8_t>(), n}};
        check_cuda_ok(kernels::launch_rope_kv_append(a, 0));
        const auto got_qkv = dqkv.read<float>(qkv.size());
        // q and k rotated (cosf/sinf may differ by an ulp between host and device).
        CHECK(nmse(got_qkv, want) < 1e-12);

        // The written slots, byte for byte (INT8 codes may differ by one where an ulp of k
        // moved a value across a rounding boundary), scales to float precision.
        const kv::BlockLayout& l = cpu.view().layout();
        const auto st = staging.read<uint8_t>(staging_bytes);
        const kernels::KvStaging host_st{const_cast<uint8_t*>(st.data()), n};
        size_t off_by_one = 0, worse = 0, values = 0;
        for (int32_t t = 0; t < n; ++t) {
          const uint32_t pos = uint32_t(start + t), slot = pos % 16;
          const auto blk = dev.block(pos / 16);
          const uint8_t* ref = dev.host_block(pos / 16);
          for (bool v : {false, true}) {
            const size_t off = v ? l.v_offset(layer, slot, 0) : l.k_offset(layer, slot, 0);
            const uint8_t* staged = st.data() + (v ? host_st.v_row(paged, layer, t) : host_st.k_row(paged, layer, t));
            const size_t row_bytes = kvd * l.element_bytes();
            CHECK(std::memcmp(staged, blk.data() + off, row_bytes) == 0);
            if (type == kv::KvType::int8) {
              for (size_t i = 0; i < kvd; ++i) {
                const int d = int(int8_t(blk[off + i])) - int(int8_t(ref[off + i]));
                off_by_one += d == 1 || d == -1;
                worse += d > 1 || d < -1;
              }
              values += kvd;
              for (int32_t kvh = 0; kvh < h.n_kv_heads; ++kvh) {
                const size_t so = v ? l.v_scale_offset(layer, slot, kvh) : l.k_scale_offset(layer, slot, kvh);
                float gs, rs;
                std::memcpy(&gs, blk.data() + so, 4);
                std::memcpy(&rs, ref + so, 4);
                CHECK(gs == doctest::Approx(rs).epsilon(1e-6));
                const size_t sto = v ? host_st.v_scales(paged, layer, t) : host_st.k_scales(paged, layer, t);
                CHECK(std::memcmp(st.data() + sto + size_t(kvh) * 4, &gs, 4) == 0);
              }
            } else {
              std::vector<float> g(kvd), r(kvd);
              for (int32_t kvh = 0; kvh < h.n_kv_heads; ++kvh) {
                (v ? cpu.view().read_v(layer, pos, kvh, &r[size_t(kvh) * h.head_dim])
                   : cpu.view().read_k(layer, pos, kvh, &r[size_t(kvh) * h.head_dim]));
              }
              for (size_t i = 0; i < kvd; ++i) {
                if (type == kv::KvType::f32) {
                  std::memcpy(&g[i], blk.data() + off + 4 * i, 4);
                } else {
                  uint16_t hb;
                  std::memcpy(&hb, blk.data() + off + 2 * i, 2);
                  g[i] = model::f16_to_f32(hb);
                }
              }
              CHECK(nmse(g, r) < 1e-7);
            }
          }
        }
        CHECK(worse == 0);
        CHECK(off_by_one <= values / 200 + 1);
        CHECK(dev.guards_intact());
        CHECK(staging.guards_intact());
        CHECK(dqkv.guards_intact());
      }
    }
  }
}

namespace {

// CPU attention of rows [start, start + n) of layer `layer` over a filled cache.
std::vector<float> cpu_attention(const kv::KvCache& cache, const std::vector<float>& q, int32_t n,
                                 uint32_t start, int32_t layer, int32_t n_heads, int32_t window) {
  static backend::cpu::ThreadPool pool(2);
  std::vector<float> out(q.size());
  backend::cpu::AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.n_rows = size_t(n);
  a.start_pos = start;
  a.layer = layer;
  a.n_heads = n_heads;
  a.sliding_window = window;
  backend::cpu::attention(a, const_cast<kv::KvCache&>(cache).view(), pool);
  return out;
}

}  // namespace

TEST_CASE("prefill attention matches the CPU over the paged cache (causal, GQA, windows), in every layout") {
  PARLEY_GPU_OR_SKIP();
  for (Heads h : {Heads{6, 2, 8}, Heads{4, 4, 64}, Heads{8, 1, 128}, Heads{4, 2, 128}, Heads{16, 1, 64},
                  Heads{4, 2, 256}, Heads{4, 4, 16}, Heads{2, 1, 32}}) {
    for (kv::KvType type : {kv::KvType::int8, kv::KvType::f16, kv::KvType::f32}) {
      for (auto [start, n] : {std::pair{0, 2}, std::pair{0, 45}, std::pair{29, 70}, std::pair{97, 33},
                              std::pair{0, 200}, std::pair{50, 130}}) {
        for (int32_t window : {0, 7}) {
          CAPTURE(h.head_dim);
          CAPTURE(h.n_heads);
          CAPTURE(int(type));
          CAPTURE(start);
          CAPTURE(n);
          CAPTURE(window);
          const int32_t layer = 1;
          const uint32_t end = uint32_t(start + n);
          kv::KvCache cache(type, kv::KvShape{2, h.n_kv_heads, h.head_dim}, end);
          fill_cache(cache, layer, end, uint32_t(end + h.head_dim));
          const size_t qd = size_t(h.n_heads) * h.head_dim;
          const auto q = random_floats(size_t(n) * qd, uint32_t(n * 3 + window));
          const auto want = cpu_attention(cache, q, n, uint32_t(start), layer, h.n_heads, window);

          DeviceCache dev(cache, end);
          dev.upload();
          // q rows inside a wider row (as in the fused qkv buffer): stride qd + 5 heads.
          const int32_t stride = int32_t(qd) + 5 * h.head_dim;
          std::vector<float> strided(size_t(n) * stride, 1e30f);
          for (int32_t t = 0; t < n; ++t) std::copy_n(&q[size_t(t) * qd], qd, &strided[size_t(t) * stride]);
          GuardedBuffer dq(strided.size() * 4), out(q.size() * 4);
          const auto step = step_buffer(start, n);
          dq.upload(strided.data(), strided.size() * 4);
          kernels::AttnPrefillArgs a{dq.as<float>(), stride, out.get(), kernels::kF32, n, h.n_heads,
                                     layer, window, step->as<kernels::StepParams>(), dev.paged()};
          check_cuda_ok(kernels::launch_attn_prefill(a, 0));
          // F32 caches: exact F32 arithmetic. INT8 and F16: tensor cores, with Q, K, V and
          // the probabilities rounded to F16 (about 2^-11 relative each).
          const double bound = type == kv::KvType::f32 ? 1e-10 : 2e-5;
          const auto got = out.read<float>(q.size());
          CHECK(nmse(got, want) < bound);
          CHECK(out.guards_intact());
          // The tensor-core kernel's other layouts: the same sums, so the same bits.
          if (type != kv::KvType::f32) {
            for (int32_t variant = 1; variant < kernels::kPrefillVariants; ++variant) {
              CAPTURE(variant);
              a.variant = variant;
              check_cuda_ok(cudaMemset(out.get(), 0xFF, q.size() * 4));
              check_cuda_ok(kernels::launch_attn_prefill(a, 0));
              CHECK(out.read<float>(q.size()) == got);
              CHECK(out.guards_intact());
            }
            a.variant = kernels::kPrefillVariants;
            CHECK(kernels::launch_attn_prefill(a, 0) == cudaErrorInvalidValue);
          }
        }
      }
    }
  }
}

TEST_CASE("split-KV decode + merge matches the CPU, every split count agrees, merged in the kernel too") {
  PARLEY_GPU_OR_SKIP();
  // Groups of 3 (one head per block), 1, 8, 4 and 16 (two blocks of 8 per KV head).
  for (Heads h : {Heads{6, 2, 8}, Heads{4, 4, 64}, Heads{8, 1, 128}, Heads{32, 8, 128}, Heads{16, 1, 64},
                  Heads{4, 2, 256}, Heads{4, 4, 16}, Heads{2, 1, 32}}) {
    for (kv::KvType type : {kv::KvType::int8, kv::KvType::f16, kv::KvType::f32}) {
      for (uint32_t pos : {0u, 15u, 16u, 100u, 1000u}) {
        for (int32_t window : {0, 40}) {
          CAPTURE(h.head_dim);
          CAPTURE(h.n_heads);
          CAPTURE(int(type));
          CAPTURE(pos);
          CAPTURE(window);
          const int32_t layer = 0;
          kv::KvCache cache(type, kv::KvShape{1, h.n_kv_heads, h.head_dim}, pos + 1);
          fill_cache(cache, layer, pos + 1, pos + uint32_t(h.n_heads));
          const size_t qd = size_t(h.n_heads) * h.head_dim;
          const auto q = random_floats(qd, pos + 77);
          const auto want = cpu_attention(cache, q, 1, pos, layer, h.n_heads, window);
          DeviceCache dev(cache, pos + 1);
          dev.upload();
          GuardedBuffer dq(qd * 4);
          const auto step = step_buffer(int32_t(pos), 1);
          dq.upload(q.data(), qd * 4);
          std::vector<float> first;
          for (int32_t splits : {1, 3, 64}) {
            GuardedBuffer part_o(size_t(splits) * qd * 4), part_md(size_t(splits) * h.n_heads * 8),
                out(qd * 4);
            kernels::AttnDecodeArgs d{dq.as<float>(), part_o.as<float>(), part_md.as<float>(), splits,
                                      h.n_heads, layer, window, step->as<kernels::StepParams>(), dev.paged()};
            check_cuda_ok(kernels::launch_attn_decode(d, 0));
            kernels::AttnMergeArgs m{part_o.as<float>(), part_md.as<float>(), out.get(), kernels::kF32,
                                     splits, h.n_heads, h.head_dim};
            check_cuda_ok(kernels::launch_attn_merge(m, 0));
            const auto got = out.read<float>(qd);
            CHECK(nmse(got, want) < 1e-10);
            if (first.empty()) first = got;
            CHECK(nmse(got, first) < 1e-11);
            // Merged by the last block of each head group instead: the same values, and the
            // counters zero again, so a second launch (the next layer) merges as well.
            GuardedBuffer counters(size_t(h.n_heads) * 4), merged(qd * 4);
            check_cuda_ok(cudaMemset(counters.get(), 0, counters.bytes()));
            d.done_counters = counters.as<int32_t>();
            d.out = merged.get();
            d.out_type = kernels::kF32;
            for (int launch = 0; launch < 2; ++launch) {
              CAPTURE(launch);
              check_cuda_ok(cudaMemset(merged.get(), 0xFF, qd * 4));
              check_cuda_ok(kernels::launch_attn_decode(d, 0));
              CHECK(merged.read<float>(qd) == got);
              CHECK(counters.read<int32_t>(size_t(h.n_heads)) == std::vector<int32_t>(size_t(h.n_heads), 0));
            }
            CHECK(part_o.guards_intact());
            CHECK(part_md.guards_intact());
            CHECK(out.guards_intact());
            CHECK(merged.guards_intact());
            CHECK(counters.guards_intact());
          }
        }
      }
    }
  }
}
