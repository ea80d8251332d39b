#include "session_fixture.h"

#include <atomic>
#include <thread>

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

const std::string& long_context_model() {
  SynthSpec spec;
  spec.dim = 256;
  spec.hidden_dim = 512;
  spec.context_length = 2048;
  return synthetic_gguf_once("long-context", spec);
}

std::shared_ptr<engine::Engine> open_long_context_engine() {
  engine::EngineOptions options;
  options.model_path = long_context_model();
  options.kv_type = kv::KvType::int8;
  options.n_threads = 1;
  return std::make_shared<engine::Engine>(options);
}

Status run_while_stopping(engine::Session& s, const std::function<void()>& work) {
  std::atomic<bool> started{false}, done{false};
  std::thread stopper([&] {
    while (!done.load()) {
      s.interrupt();
      started.store(true);
      std::this_thread::yield();
    }
  });
  while (!started.load()) std::this_thread::yield();
  Status status = Status::ok;
  {
    const auto use = s.try_use();
    try {
      work();
    } catch (const Error& e) {
      status = e.status();
    }
  }
  done.store(true);
  stopper.join();
  return status;
}

StoppedSend send_stopped_beside_rewound(engine::Session& stopped, engine::Session& rewound,
                                        const std::string& message) {
  greedy_turn(rewound, message, 4);
  rewound.rewind(1);
  engine::GenerateParams greedy;
  greedy.sampler.temperature = 0;
  greedy.max_tokens = 4;
  StoppedSend sent;
  sent.status = run_while_stopping(stopped, [&] {
    stopped.send(message, greedy, [](std::string_view) { return true; }, sent.stats);
  });
  return sent;
}

std::string story_system_prompt() {
  return "Once upon a time, there was a little girl named Lily. She loved to play outside in "
         "the park with her big red ball. One day, she saw a small dog under a tree. The dog "
         "was sad because he could not find his mom. Lily wanted to help him, so she looked "
         "everywhere in the park. They looked behind the slide, near the pond and under the "
         "bench. Then they heard a loud bark and saw a big brown dog running to them. It was "
         "the mom! The little dog was very happy and wagged his tail. Lily smiled and went home "
         "to tell her mom about her new friends. Her mom gave her a big hug and a warm cookie.";
}

}  // namespace parley::test
