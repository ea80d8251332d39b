// Hyperparameters of a Llama-family model, from GGUF metadata or config.json.
#pragma once

#include <cstdint>
#include <string>

namespace parley::model {

struct ModelConfig {
  std::string architecture = "llama";
  std::string name;             // general.name, or the directory's name
  int32_t n_vocab = 0;
  int32_t dim = 0;              // embedding length
  int32_t hidden_dim = 0;       // SwiGLU intermediate size
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;       // divides n_heads (MHA: equal, GQA, MQA: 1)
  int32_t head_dim = 0;         // dim / n_heads unless the file says otherwise
  int32_t context_length = 0;   // trained context
  int32_t sliding_window = 0;   // 0 = full attention
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 0;
  int32_t pad_id = -1;
  bool add_bos = true;
  std::string chat_template;    // the model's own template text (Jinja), "" when none

  // Throws Error(bad_model) naming the first inconsistent field.
  void validate() const;
};

// `pad_id`, or -1 (none) when it is outside [0, n_vocab), with a warning naming `source` (the
// file and key) unless it is -1. Parley never pads, so such an id need not stop a model
// loading (nor does it in llama.cpp). Any int64, as a file may store 0xFFFFFFFF.
int32_t pad_id_or_none(int64_t pad_id, int32_t n_vocab, const std::string& source);

}  // namespace parley::model
