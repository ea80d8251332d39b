// The *_options_init_sized entry points: documented defaults for each options struct.
#include "api/options.h"

#include "parley.h"

extern "C" {

PARLEY_API void parley_engine_options_init_sized(parley_engine_options* o, size_t size) {
  parley_engine_options d{};
  d.struct_size = sizeof d;
  d.device = "auto";
  d.kv_type = PARLEY_KV_DEFAULT;
  parley::api::init_sized(o, size, d);
}

PARLEY_API void parley_session_options_init_sized(parley_session_options* o, size_t size) {
  parley_session_options d{};
  d.struct_size = sizeof d;
  d.overflow = PARLEY_OVERFLOW_ERROR;
  parley::api::init_sized(o, size, d);
}

PARLEY_API void parley_generate_options_init_sized(parley_generate_options* o, size_t size) {
  parley_generate_options d{};
  d.struct_size = sizeof d;
  d.seed = 0;
  d.max_tokens = 256;
  d.temperature = 0.8f;
  d.top_k = 40;
  d.top_p = 0.95f;
  d.min_p = 0.05f;
  d.repeat_penalty = 1.0f;
  d.repeat_last_n = 64;
  d.ignore_eos = 0;
  parley::api::init_sized(o, size, d);
}

}  // extern "C"
