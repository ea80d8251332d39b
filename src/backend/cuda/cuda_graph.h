// One captured CUDA graph: capture a stream's work once, replay it with one launch.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace parley::backend::cuda {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  bool ready() const { return exec_ != nullptr; }
  // Records `work` (stream operations only) on `stream` into a fresh executable graph.
  void capture(cudaStream_t stream, const std::function<void()>& work);
  void launch(cudaStream_t stream) const;
  void reset();

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace parley::backend::cuda
