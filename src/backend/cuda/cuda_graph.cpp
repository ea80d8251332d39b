#include "backend/cuda/cuda_graph.h"

#include "backend/cuda/cuda_check.h"

namespace parley::backend::cuda {

CudaGraph::~CudaGraph() { reset(); }

void CudaGraph::reset() {
  if (exec_) cudaGraphExecDestroy(exec_);
  exec_ = nullptr;
}

void CudaGraph::capture(cudaStream_t stream, const std::function<void()>& work) {
  reset();
  PARLEY_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    work();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);  // leaves the stream usable again
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t graph = nullptr;
  PARLEY_CUDA(cudaStreamEndCapture(stream, &graph));
  const cudaError_t e = cudaGraphInstantiate(&exec_, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) exec_ = nullptr;
  PARLEY_CUDA(e);
}

void CudaGraph::launch(cudaStream_t stream) const { PARLEY_CUDA(cudaGraphLaunch(exec_, stream)); }

}  // namespace parley::backend::cuda
