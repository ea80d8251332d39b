/* The boundary between libparley and libparley_cuda.so: plain C structs and one function
   table, resolved by dlsym("parley_cuda_module_api"). Nothing else crosses it: no C++ types,
   no exceptions, no allocations freed on the other side. Status values are PARLEY_* codes. */
#ifndef PARLEY_CUDA_MODULE_API_H
#define PARLEY_CUDA_MODULE_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a struct or the table below changes shape. */
#define PARLEY_CUDA_MODULE_ABI 5

/* Weight element types as the model holds them (F32, F16, BF16, Q8_0, Q4_1, Q5_1, Q4_0; a
   file's other 4- to 6-bit blocks arrive in one of those). */
enum {
  PARLEY_CUDA_F32 = 0,
  PARLEY_CUDA_F16 = 1,
  PARLEY_CUDA_BF16 = 2,
  PARLEY_CUDA_Q8_0 = 3,
  PARLEY_CUDA_Q4_1 = 4,
  PARLEY_CUDA_Q5_1 = 5,
  PARLEY_CUDA_Q4_0 = 6
};
/* Resident weight type: AUTO keeps BF16 files in BF16 and puts the rest in F16. */
enum { PARLEY_CUDA_WEIGHTS_AUTO = -1 };

typedef struct parley_cuda_tensor {
  const void *data; /* host bytes, rows * row bytes */
  uint64_t n_bytes;
  int64_t rows, cols; /* row-major [rows, cols]; a vector has rows = 1 */
  int32_t dtype;      /* PARLEY_CUDA_F32.. */
  int32_t reserved;
} parley_cuda_tensor;

typedef struct parley_cuda_layer {
  parley_cuda_tensor attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
} parley_cuda_layer;

typedef struct parley_cuda_model {
  int32_t n_vocab, dim, hidden_dim, n_layers, n_heads, n_kv_heads, head_dim, sliding_window;
  float rms_eps, rope_theta;
  int32_t weight_type; /* PARLEY_CUDA_WEIGHTS_AUTO, PARLEY_CUDA_F32, _F16 or _BF16 */
  int32_t use_graphs;  /* capture the decode step in a CUDA graph */
  parley_cuda_tensor tok_embd, output_norm, output;
  const parley_cuda_layer *layers; /* [n_layers] */
  /* Told the host bytes of each part of the model once it is on the device (the embedding,
     output and final norm, then each layer), so that a long upload can be followed; a
     non-zero answer stops it: create() then returns PARLEY_E_CANCELLED. NULL = none. */
  int32_t (*uploaded)(uint64_t host_bytes, void *user);
  void *uploaded_user;
} parley_cuda_model;

/* One sequence's cache as the host holds it: the blocks of positions [0, start_pos + n). */
typedef struct parley_cuda_kv {
  int32_t kv_type; /* PARLEY_KV_INT8 1, _F16 2, _F32 3 */
  int32_t n_layers, n_kv_heads, head_dim;
  uint64_t block_bytes;
  uint32_t n_blocks;
  uint32_t capacity;          /* positions the sequence may use */
  uint8_t *const *host_blocks; /* [n_blocks]: the host's block bytes */
  const uint64_t *stamps;     /* [n_blocks]: BlockPool stamps; a changed stamp = new bytes */
  int32_t write_host; /* 1: forward also writes the new rows into host_blocks; 0: they stay
                         on the device until download() brings a block back */
  int32_t reserved;
} parley_cuda_kv;

typedef struct parley_cuda_batch {
  const int32_t *tokens;
  uint32_t n_tokens;
  uint32_t start_pos;
  int32_t all_logits;
  int32_t reserved;
} parley_cuda_batch;

typedef struct parley_cuda_measurements {
  double copy_gb_s;      /* device-to-device copy, bytes read + written per second / 1e9 */
  double bf16_tflops;    /* cuBLAS bf16 GEMM, F32 accumulate, m = n = k = gemm_size */
  int32_t gemm_size;
  int32_t reserved;
  char device_name[128];
} parley_cuda_measurements;

typedef struct parley_cuda_backend parley_cuda_backend;

typedef struct parley_cuda_api {
  uint32_t abi_version; /* PARLEY_CUDA_MODULE_ABI */
  uint32_t reserved;
  /* Devices visible to this process (0 when there is no driver or no GPU); never fails. */
  int32_t (*device_count)(void);
  /* Uploads the model to device `device`. On failure returns a status and writes a message. */
  int32_t (*create)(const parley_cuda_model *model, int32_t device, parley_cuda_backend **out,
                    char *err, size_t err_cap);
  void (*destroy)(parley_cuda_backend *b);
  uint32_t (*max_batch)(const parley_cuda_backend *b);
  /* Writes K/V of the batch into the device blocks and the host's, then attends; logits are
     [all_logits ? n_tokens : 1, n_vocab]. One call at a time per backend (the host locks). */
  int32_t (*forward)(parley_cuda_backend *b, const parley_cuda_batch *batch,
                     const parley_cuda_kv *kv, float *logits, uint64_t n_logits, char *err,
                     size_t err_cap);
  /* Copies the device's copy of the host block at host_block (allocation `stamp`, of a cache
     of kv_type and block_bytes) into host_block. Fails (PARLEY_E_INTERNAL) when the device
     holds no such copy. One call at a time per backend, as forward. */
  int32_t (*download)(parley_cuda_backend *b, uint8_t *host_block, uint64_t stamp, int32_t kv_type,
                      uint64_t block_bytes, char *err, size_t err_cap);
  /* Ceilings for benchmarks: copy bandwidth over copy_bytes and a bf16 GEMM rate. */
  int32_t (*measure)(int32_t device, uint64_t copy_bytes, int32_t gemm_size,
                     parley_cuda_measurements *out, char *err, size_t err_cap);
} parley_cuda_api;

typedef const parley_cuda_api *(*parley_cuda_module_api_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
