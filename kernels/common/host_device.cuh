// Lets math in kernels/common compile for both nvcc and the host compiler.
#pragma once

#if defined(__CUDACC__)
#  define PARLEY_HD __host__ __device__ __forceinline__
#else
#  define PARLEY_HD inline
#endif
