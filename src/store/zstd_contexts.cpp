// ZSTD_customMem and the *_advanced constructors are in zstd's experimental section (defined
// before zstd.h is first included); they have been unchanged since zstd 1.0, and Debian's
// shared libzstd exports them.
#define ZSTD_STATIC_LINKING_ONLY
#include "store/zstd_contexts.h"

#include <zstd_errors.h>

#include <memory>
#include <new>

#include "common/error.h"

namespace parley::store {
namespace {

void* zstd_allocate(void*, size_t bytes) { return ::operator new(bytes, std::nothrow); }
void zstd_free(void*, void* p) { ::operator delete(p); }

constexpr ZSTD_customMem kOperatorNewMemory{zstd_allocate, zstd_free, nullptr};

struct FreeCCtx {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct FreeDCtx {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

ZSTD_CCtx* thread_compression_context() {
  thread_local std::unique_ptr<ZSTD_CCtx, FreeCCtx> ctx;
  if (!ctx) ctx.reset(ZSTD_createCCtx_advanced(kOperatorNewMemory));
  if (!ctx) fail(Status::out_of_memory, "zstd: cannot create a compression context");
  return ctx.get();
}

ZSTD_DCtx* thread_decompression_context() {
  thread_local std::unique_ptr<ZSTD_DCtx, FreeDCtx> ctx;
  if (!ctx) ctx.reset(ZSTD_createDCtx_advanced(kOperatorNewMemory));
  if (!ctx) fail(Status::out_of_memory, "zstd: cannot create a decompression context");
  return ctx.get();
}

bool zstd_out_of_memory(size_t code) {
  return ZSTD_isError(code) && ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation;
}

std::string zstd_error(size_t code) { return std::string("zstd: ") + ZSTD_getErrorName(code); }

}  // namespace parley::store
