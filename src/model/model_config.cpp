#include "model/model_config.h"

#include <cmath>
#include <limits>

#include "common/error.h"
#include "common/log.h"

namespace parley::model {

namespace {

[[noreturn]] void bad(const std::string& what) { fail(Status::bad_model, "model config: " + what); }

void positive(int32_t v, const char* field) {
  if (v <= 0) bad(std::string(field) + " = " + std::to_string(v) + " must be positive");
}

void token_id(int32_t id, int32_t n_vocab, const char* field) {
  if (id < 0 || id >= n_vocab) {
    bad(std::string(field) + " = " + std::to_string(id) + " is outside the vocabulary [0, " +
        std::to_string(n_vocab) + ")");
  }
}

void finite_positive(float v, const char* field) {
  if (!std::isfinite(v) || v <= 0.0f)
    bad(std::string(field) + " = " + std::to_string(v) + " must be finite and positive");
}

}  // namespace

int32_t pad_id_or_none(int64_t pad_id, int32_t n_vocab, const std::string& source) {
  if (pad_id == -1 || (pad_id >= 0 && pad_id < n_vocab)) return int32_t(pad_id);
  log::warn_line(source + " " + std::to_string(pad_id) + " is outside the vocabulary [0, " +
                 std::to_string(n_vocab) + "): ignored (the padding id is never used)");
  return -1;
}

void ModelConfig::validate() const {
  if (architecture != "llama") bad("architecture '" + architecture + "' is not llama");
  positive(n_vocab, "n_vocab");
  positive(dim, "dim");
  positive(hidden_dim, "hidden_dim");
  positive(n_layers, "n_layers");
  positive(n_heads, "n_heads");
  positive(n_kv_heads, "n_kv_heads");
  positive(head_dim, "head_dim");
  positive(context_length, "context_length");
  if (n_kv_heads > n_heads || n_heads % n_kv_heads != 0) {
    bad("n_heads = " + std::to_string(n_heads) +
        " is not a multiple of n_kv_heads = " + std::to_string(n_kv_heads));
  }
  if (head_dim % 2 != 0)
    bad("head_dim = " + std::to_string(head_dim) + " must be even (RoPE rotates pairs)");
  // Products that size buffers later must stay in int32 range.
  if (int64_t(n_heads) * head_dim > std::numeric_limits<int32_t>::max())
    bad("n_heads * head_dim overflows");
  if (sliding_window < 0)
    bad("sliding_window = " + std::to_string(sliding_window) + " is negative");
  finite_positive(rms_eps, "rms_eps");
  finite_positive(rope_theta, "rope_theta");
  token_id(bos_id, n_vocab, "bos_id");
  token_id(eos_id, n_vocab, "eos_id");
  token_id(unk_id, n_vocab, "unk_id");
  if (pad_id != -1) token_id(pad_id, n_vocab, "pad_id");
}

}  // namespace parley::model
