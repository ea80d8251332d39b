#include "abi_fixture.h"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>

#include "support/shared_assets.h"
#include "support/synth_model.h"

namespace parley::test {

const std::string& tiny_chat_model() {
  static const auto dir = std::make_unique<TempDir>();
  static const std::string path = [] {
    SynthSpec spec;
    spec.context_length = 256;
    auto weights = make_synth_weights(spec);
    auto vocab = make_spm_vocab(spec.n_vocab);
    // Silence the rows of control and byte tokens so greedy picks a word piece: every reply
    // then streams text, which the callback tests rely on.
    for (int32_t id = 0; id < 259; ++id) {
      std::fill_n(weights.output.begin() + size_t(id) * spec.dim, spec.dim, 0.0f);
    }
    const std::string p = (dir->path() / "tiny-chat.gguf").string();
    write_gguf(spec, weights, vocab, p);
    return p;
  }();
  return path;
}

EngineHandle::EngineHandle(const std::string& model, int32_t kv_type, uint32_t context_length,
                           uint64_t kv_budget) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  o.kv_type = kv_type;
  o.context_length = context_length;
  o.kv_budget_bytes = kv_budget;
  o.n_threads = 2;
  const parley_status st = parley_engine_open(&o, &e);
  REQUIRE_MESSAGE(st == PARLEY_OK, parley_last_error());
}

SessionHandle::SessionHandle(parley_engine* e, const char* chat_template) {
  parley_session_options o;
  parley_session_options_init(&o);
  o.chat_template = chat_template;
  const parley_status st = parley_session_create(e, &o, &s);
  REQUIRE_MESSAGE(st == PARLEY_OK, parley_last_error());
}

bool last_error_mentions(const char* needle) {
  return std::strstr(parley_last_error(), needle) != nullptr;
}

bool is_one_line_of_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x20 || b == 0x7F) return false;
    // The sequence's length from its first byte; 0: not a first byte.
    const size_t n = b < 0x80           ? 1
                     : (b >> 5) == 0x6  ? 2
                     : (b >> 4) == 0xE  ? 3
                     : (b >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace parley::test
