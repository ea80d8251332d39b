// zstd contexts for the KV codec: one of each kind per thread, reused, since creating one
// costs more than coding a block. Their memory comes from operator new, like the rest of
// Parley's: an application that replaces the global allocator accounts for zstd too, and a
// failed allocation inside zstd is reported as out of memory rather than as a damaged blob.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <string>

namespace parley::store {

// This thread's contexts; Error(out_of_memory) when one cannot be created.
ZSTD_CCtx* thread_compression_context();
ZSTD_DCtx* thread_decompression_context();

// Whether a zstd result code says that zstd could not allocate memory.
bool zstd_out_of_memory(size_t code);
std::string zstd_error(size_t code);

}  // namespace parley::store
