// A backend runs the network on one device: tokens in, K/V written to the sequence's cache,
// logits out.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kv/kv_view.h"

namespace parley::model {
struct LoadedModel;
struct TensorView;
}

namespace parley::backend {

struct Batch {
  std::span<const int32_t> tokens;  // [n] new tokens of one sequence
  uint32_t start_pos = 0;           // position of tokens[0]; the cache holds [0, start_pos)
  bool all_logits = false;          // logits for every token, else only for the last
};

// One sequence's share of a step that runs several sequences at once.
struct SequenceStep {
  Batch batch;
  kv::KvView* kv = nullptr;
  std::span<float> logits;  // as forward()'s
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu", "cuda:0", ...
  virtual std::string name() const = 0;

  // The largest batch.tokens.size() one forward() accepts (callers chunk longer inputs).
  virtual uint32_t max_batch() const = 0;

  // Runs the batch: writes K/V of positions [start_pos, start_pos + n) into kv (all layers),
  // then attends over the cache. logits: [n_rows, n_vocab], n_rows = all_logits ? n : 1.
  // Thread-safety: any thread; calls on different sequences may run at the same time.
  // Throws Error(backend) on device failure; Error(internal) on a shape mismatch.
  virtual void forward(const Batch& batch, kv::KvView& kv, std::span<float> logits) = 0;

  // How many sequences one forward_many() serves with a single read of the weights; 1 for a
  // backend that runs them one after another.
  virtual uint32_t max_sequences() const { return 1; }

  // Runs each step as forward() would, with the same K/V and the same logits bit for bit, but
  // together: their rows share every weight read (decode is bound by reading the weights, so N
  // sequences cost about as much as one). The steps' KV views are distinct; at most
  // max_sequences() steps, their tokens together at most max_batch().
  // Throws as forward() does; after a throw any step may have written its K/V (running a step
  // again writes the same values).
  virtual void forward_many(std::span<const SequenceStep> steps) {
    for (const SequenceStep& s : steps) forward(s.batch, *s.kv, s.logits);
  }
};

// Called by a backend with each weight view (of the model it was made from) once it holds its
// own copy of those bytes and will not read them through the view again.
using WeightRelease = std::function<void(const model::TensorView&)>;

// Told, as a backend is made, how many bytes of the model's weights it has taken so far:
// copied into its own layouts, uploaded to its device, or (an embedding read where it lies)
// taken as they are; every distinct weight once, so the count ends at their sum. Making a
// backend takes seconds for a large model. It may throw to stop the making, which then
// throws that.
using WeightsTaken = std::function<void(uint64_t bytes_so_far)>;

// A device string read without touching any device.
struct DeviceName {
  enum class Kind { automatic, cpu, cuda } kind = Kind::automatic;
  int32_t index = 0;  // CUDA device index
};
// "" or "auto", "cpu", "cuda" (device 0), "cuda:N" (N decimal digits). Throws
// Error(invalid_argument) for anything else, an index past INT32_MAX included.
DeviceName parse_device(std::string_view device);

// device: as parse_device reads it. n_threads: 0 = one per core (CPU only).
// "auto" takes CUDA device 0 when libparley_cuda.so loads and sees a device, else the CPU.
// Each weight the backend copies is then given to `release`: a model that serves this backend
// only passes model::release_weight_bytes, so that the process holds its weights once. Without
// one, a copied weight's file pages are dropped (model::drop_file_pages; they come back if read
// again) and the model can serve further backends. `taken` follows the making (a backend
// tried and given up for another, "auto" falling back to the CPU, counts anew from 0).
// Throws Error(invalid_argument) for an unknown device, Error(backend) for a CUDA device this
// machine lacks (no module, no driver, no such GPU) or one that cannot hold the model; what
// `release` or `taken` throws.
std::unique_ptr<Backend> make_backend(std::string_view device, const model::LoadedModel& model,
                                      int32_t n_threads, const WeightRelease& release = {},
                                      const WeightsTaken& taken = {});

}  // namespace parley::backend
