// parley_tokenize / parley_detokenize.
#include "api/buffers.h"
#include "api/handles.h"
#include "parley.h"

using namespace parley;
using namespace parley::api;

extern "C" {

PARLEY_API parley_status parley_tokenize(parley_engine* e, const char* text, int32_t add_bos,
                                         int32_t* ids, size_t cap, size_t* n_needed) {
  return guarded(__func__, [&] {
    auto handle = acquire(e);
    check_arg(text, "text is NULL");
    const auto& tokenizer = handle->engine->tokenizer();
    std::vector<int32_t> out;
    if (add_bos) out.push_back(tokenizer.bos_id());
    const auto encoded = tokenizer.encode(text);
    out.insert(out.end(), encoded.begin(), encoded.end());
    write_ids(out, ids, cap, n_needed);
  });
}

PARLEY_API parley_status parley_detokenize(parley_engine* e, const int32_t* ids, size_t n,
                                           char* buf, size_t cap, size_t* needed) {
  return guarded(__func__, [&] {
    auto handle = acquire(e);
    check_arg(ids || n == 0, "ids is NULL but n is not 0");
    const std::string text =
        n ? handle->engine->tokenizer().decode(std::span<const int32_t>(ids, n)) : std::string();
    write_string(text, buf, cap, needed);
  });
}

}  // extern "C"
