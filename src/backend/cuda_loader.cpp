#include "backend/cuda_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <vector>

#include "backend/cuda/module_api.h"
#include "common/error.h"
#include "common/log.h"
#include "model/model_loader.h"

namespace parley::backend {
namespace {

constexpr const char* kModuleName = "libparley_cuda.so";

struct Module {
  const parley_cuda_api* api = nullptr;
  std::string problem;
};

// Where this code lives (libparley.so, or an executable linking Parley statically): the
// module is looked for beside it.
std::filesystem::path own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

const Module& module() {
  static Module m;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("PARLEY_CUDA_MODULE"); env && *env) {
      candidates.push_back(env);  // an explicit choice is the only one tried
    } else {
      const auto dir = own_directory();
      if (!dir.empty()) candidates.push_back((dir / kModuleName).string());
      candidates.push_back(kModuleName);  // the loader's search path (LD_LIBRARY_PATH, ...)
    }
    std::vector<std::string> reasons;
    // The search path may lead to the file tried first: its reason is said once.
    const auto add_reason = [&](const std::string& why) {
      if (std::find(reasons.begin(), reasons.end(), why) == reasons.end()) reasons.push_back(why);
    };
    for (const std::string& path : candidates) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char* why = dlerror();
        add_reason(why ? why : path);
        continue;
      }
      // Kept loaded for the life of the process: backends may outlive any one owner.
      auto fn = reinterpret_cast<parley_cuda_module_api_fn>(dlsym(handle, "parley_cuda_module_api"));
      const parley_cuda_api* api = fn ? fn() : nullptr;
      if (!api || api->abi_version != PARLEY_CUDA_MODULE_ABI) {
        add_reason(path + ": not a Parley CUDA module of ABI " +
                   std::to_string(PARLEY_CUDA_MODULE_ABI));
        continue;
      }
      m.api = api;
      return;
    }
    std::string tried;
    for (const std::string& why : reasons) tried += (tried.empty() ? "" : "; ") + why;
    m.problem = "cannot load " + std::string(kModuleName) + " (" + tried + ")";
  });
  return m;
}

int32_t tensor_type(model::DType t) {
  switch (t) {
    case model::DType::f32: return PARLEY_CUDA_F32;
    case model::DType::f16: return PARLEY_CUDA_F16;
    case model::DType::bf16: return PARLEY_CUDA_BF16;
    case model::DType::q8_0: return PARLEY_CUDA_Q8_0;
    case model::DType::q4_0: return PARLEY_CUDA_Q4_0;
    case model::DType::q4_1: return PARLEY_CUDA_Q4_1;
    case model::DType::q5_1: return PARLEY_CUDA_Q5_1;
  }
  return -1;
}

parley_cuda_tensor tensor(const model::TensorView& t) {
  parley_cuda_tensor c{};
  c.data = t.data;
  c.n_bytes = t.n_bytes;
  c.rows = t.rows;
  c.cols = t.cols;
  c.dtype = tensor_type(t.dtype);
  return c;
}

// PARLEY_CUDA_WEIGHTS=f32|f16|bf16 overrides the resident type (f32 for reference checks).
int32_t weight_type_from_env() {
  const char* env = std::getenv("PARLEY_CUDA_WEIGHTS");
  const std::string v = env ? env : "";
  if (v == "f32") return PARLEY_CUDA_F32;
  if (v == "f16") return PARLEY_CUDA_F16;
  if (v == "bf16") return PARLEY_CUDA_BF16;
  require(v.empty() || v == "auto", Status::invalid_argument,
          "PARLEY_CUDA_WEIGHTS must be auto, f32, f16 or bf16, not '" + v + "'");
  return PARLEY_CUDA_WEIGHTS_AUTO;
}

// PARLEY_CUDA_KV_WRITEBACK=1: new K/V rows stay on the device until the host reads their
// block (spill, copy-on-write), instead of being copied into the host's blocks by every
// forward. Off by default until measured on a device.
bool kv_write_back_from_env() {
  const char* env = std::getenv("PARLEY_CUDA_KV_WRITEBACK");
  return env && std::string(env) == "1";
}

class CudaModuleBackend final : public Backend {
 public:
  CudaModuleBackend(const parley_cuda_api* api, parley_cuda_backend* b, int32_t device,
                    int32_t n_vocab, bool write_back)
      : api_(api), b_(b), device_(device), n_vocab_(n_vocab), write_back_(write_back) {
    if (write_back_) host_sync_ = std::make_shared<HostSyncForward>(this);
  }
  ~CudaModuleBackend() override {
    if (host_sync_) host_sync_->owner = nullptr;  // a pool still holding it gets an error
    api_->destroy(b_);
  }

  std::string name() const override { return "cuda:" + std::to_string(device_); }
  uint32_t max_batch() const override { return api_->max_batch(b_); }

  void forward(const Batch& batch, kv::KvView& kv, std::span<float> logits) override {
    const size_t n = batch.tokens.size();
    require(n > 0, Status::invalid_argument, "forward() needs at least one token");
    require(uint64_t(batch.start_pos) + n <= kv.capacity(), Status::internal,
            "positions exceed the KV cache capacity " + std::to_string(kv.capacity()));
    for (int32_t id : batch.tokens) {
      require(id >= 0 && id < n_vocab_, Status::invalid_argument,
              "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(n_vocab_) + ")");
    }
    std::lock_guard lock(mutex_);  // one device stream: calls take turns
    if (write_back_) kv.pool().set_host_sync(host_sync_);
    const uint32_t end = batch.start_pos + uint32_t(n);
    const uint32_t n_blocks = (end + kv::kBlockTokens - 1) / kv::kBlockTokens;
    require(n_blocks <= kv.block_ids().size(), Status::internal,
            "the block table does not cover the positions being written");
    host_blocks_.resize(n_blocks);
    stamps_.resize(n_blocks);
    for (uint32_t i = 0; i < n_blocks; ++i) {
      const kv::BlockId id = kv.block_ids()[i];
      host_blocks_[i] = reinterpret_cast<uint8_t*>(kv.pool().data(id));
      stamps_[i] = kv.pool().stamp(id);
    }
    const kv::KvShape& s = kv.shape();
    parley_cuda_kv ckv{};
    ckv.kv_type = int32_t(kv.type());
    ckv.n_layers = s.n_layers;
    ckv.n_kv_heads = s.n_kv_heads;
    ckv.head_dim = s.head_dim;
    ckv.block_bytes = kv.layout().block_bytes();
    ckv.n_blocks = n_blocks;
    ckv.capacity = kv.capacity();
    ckv.host_blocks = host_blocks_.data();
    ckv.stamps = stamps_.data();
    ckv.write_host = write_back_ ? 0 : 1;
    parley_cuda_batch cb{};
    cb.tokens = batch.tokens.data();
    cb.n_tokens = uint32_t(n);
    cb.start_pos = batch.start_pos;
    cb.all_logits = batch.all_logits ? 1 : 0;
    char err[512] = "";
    const int32_t st = api_->forward(b_, &cb, &ckv, logits.data(), logits.size(), err, sizeof err);
    if (st != 0) fail(Status(st), err);
    if (write_back_) {
      for (uint32_t i = batch.start_pos / kv::kBlockTokens; i < n_blocks; ++i) {
        kv.pool().mark_device_newer(kv.block_ids()[i]);
      }
    }
  }

 private:
  // The pool's way back to this backend; outlives it when the pool does.
  struct HostSyncForward final : kv::HostSync {
    explicit HostSyncForward(CudaModuleBackend* o) : owner(o) {}
    void bring_to_host(kv::BlockId id, uint64_t stamp, const kv::BlockLayout& layout,
                       std::byte* bytes) override {
      require(owner != nullptr, Status::internal,
              "KV block " + std::to_string(id) + " is newer on a device whose backend is gone");
      owner->download(bytes, stamp, layout);
    }
    CudaModuleBackend* owner;
  };

  void download(std::byte* bytes, uint64_t stamp, const kv::BlockLayout& layout) {
    std::lock_guard lock(mutex_);
    char err[512] = "";
    const int32_t st = api_->download(b_, reinterpret_cast<uint8_t*>(bytes), stamp, int32_t(layout.type()),
                                      layout.block_bytes(), err, sizeof err);
    if (st != 0) fail(Status(st), err);
  }

  const parley_cuda_api* api_;
  parley_cuda_backend* b_;
  int32_t device_;
  int32_t n_vocab_;
  std::mutex mutex_;
  std::vector<uint8_t*> host_blocks_;  // per call, kept to avoid reallocating
  std::vector<uint64_t> stamps_;
  bool write_back_;
  std::shared_ptr<HostSyncForward> host_sync_;  // write-back only
};

// The module's upload reports, summed for a WeightsTaken; what it throws is kept for the
// host to throw once create() has returned.
struct UploadReports {
  const WeightsTaken* taken;
  uint64_t bytes_so_far = 0;
  std::exception_ptr thrown;
};

}  // namespace

// C linkage, as the module's table declares the function it calls.
extern "C" {
static int32_t parley_tell_uploaded(uint64_t host_bytes, void* user) {
  auto& reports = *static_cast<UploadReports*>(user);
  try {
    reports.bytes_so_far += host_bytes;
    (*reports.taken)(reports.bytes_so_far);
    return 0;
  } catch (...) {
    reports.thrown = std::current_exception();
    return 1;
  }
}
}

int32_t cuda_device_count() {
  const Module& m = module();
  return m.api ? m.api->device_count() : 0;
}

std::string cuda_module_problem() { return module().problem; }

std::unique_ptr<Backend> make_cuda_backend(const model::LoadedModel& model, int32_t device,
                                           const WeightsTaken& taken) {
  const Module& m = module();
  require(m.api != nullptr, Status::backend, m.problem);
  const model::ModelConfig& c = model.config;
  const model::Weights& w = model.weights;
  std::vector<parley_cuda_layer> layers;
  for (const model::LayerWeights& l : w.layers) {
    layers.push_back({tensor(l.attn_norm), tensor(l.wq), tensor(l.wk), tensor(l.wv), tensor(l.wo),
                      tensor(l.ffn_norm), tensor(l.w_gate), tensor(l.w_up), tensor(l.w_down)});
  }
  parley_cuda_model cm{};
  cm.n_vocab = c.n_vocab;
  cm.dim = c.dim;
  cm.hidden_dim = c.hidden_dim;
  cm.n_layers = c.n_layers;
  cm.n_heads = c.n_heads;
  cm.n_kv_heads = c.n_kv_heads;
  cm.head_dim = c.head_dim;
  cm.sliding_window = c.sliding_window;
  cm.rms_eps = c.rms_eps;
  cm.rope_theta = c.rope_theta;
  cm.weight_type = weight_type_from_env();
  const char* graphs = std::getenv("PARLEY_CUDA_GRAPHS");  // "0" turns capture off
  cm.use_graphs = graphs && std::string(graphs) == "0" ? 0 : 1;
  cm.tok_embd = tensor(w.tok_embd);
  cm.output_norm = tensor(w.output_norm);
  cm.output = tensor(w.output.empty() ? w.tok_embd : w.output);
  cm.layers = layers.data();
  // No exception may cross into the module: what `taken` throws waits here.
  UploadReports reports{&taken};
  if (taken) {
    cm.uploaded = parley_tell_uploaded;
    cm.uploaded_user = &reports;
  }
  parley_cuda_backend* b = nullptr;
  char err[512] = "";
  const int32_t st = m.api->create(&cm, device, &b, err, sizeof err);
  if (reports.thrown) {
    if (b) m.api->destroy(b);
    std::rethrow_exception(reports.thrown);
  }
  if (st != 0 || !b) fail(st ? Status(st) : Status::backend, err);
  return std::make_unique<CudaModuleBackend>(m.api, b, device, c.n_vocab, kv_write_back_from_env());
}

CudaCeilings measure_cuda_ceilings(int32_t device, uint64_t copy_bytes, int32_t gemm_size) {
  const Module& m = module();
  require(m.api != nullptr, Status::backend, m.problem);
  parley_cuda_measurements out{};
  char err[512] = "";
  const int32_t st = m.api->measure(device, copy_bytes, gemm_size, &out, err, sizeof err);
  if (st != 0) fail(Status(st), err);
  CudaCeilings c;
  c.device_name = out.device_name;
  c.copy_gb_s = out.copy_gb_s;
  c.bf16_tflops = out.bf16_tflops;
  c.gemm_size = out.gemm_size;
  return c;
}

}  // namespace parley::backend
