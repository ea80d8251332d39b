#include "session_fixture.h"

#include "common/error.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "text/chat_template.h"

namespace parley::test {

std::shared_ptr<engine::Engine> open_engine(const std::string& path, kv::KvType kv_type,
                                            uint64_t budget_bytes) {
  engine::EngineOptions o;
  o.model_path = path;
  o.kv_type = kv_type;
  o.n_threads = 2;
  o.kv_budget_bytes = budget_bytes;
  return std::make_shared<engine::Engine>(o);
}

std::shared_ptr<engine::Engine> open_engine_with_store(const std::string& model,
                                                       kv::KvType kv_type, const StoreSetup& store,
                                                       uint64_t budget_bytes) {
  engine::EngineOptions o;
  o.model_path = model;
  o.kv_type = kv_type;
  o.n_threads = 2;
  o.kv_budget_bytes = budget_bytes;
  o.store_path = store.path;
  o.idle_spill_ms = store.idle_spill_ms;
  o.store_options.vfs = store.vfs;
  return std::make_shared<engine::Engine>(o);
}

engine::SessionOptions session_options(const std::string& system_prompt,
                                       const std::string& chat_template,
                                       const std::string& scope) {
  engine::SessionOptions o;
  o.system_prompt = system_prompt;
  o.chat_template = text::template_from_name(chat_template);
  o.cache_scope = scope;
  return o;
}

engine::TurnStats greedy_turn(engine::Session& s, const std::string& text, uint32_t max_tokens) {
  engine::GenerateParams p;
  p.sampler.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  engine::TurnStats stats;
  // The right to use the session, as every caller takes it: the janitor may be spilling it.
  const auto use = s.try_use();
  if (!use) throw Error(Status::busy, "greedy_turn: the session is in use");
  s.send(text, p, nullptr, stats);
  return stats;
}

const std::string& small_synthetic_model() {
  SynthSpec spec;
  spec.context_length = 128;
  spec.n_kv_heads = 1;
  return synthetic_gguf_once("small", spec);
}

}  // namespace parley::test
