// Engine-level helpers for the session tests: an engine on a model file, greedy turns, and
// a small synthetic chat model that needs nothing from outside the repository.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/session.h"

namespace parley::test {

std::shared_ptr<engine::Engine> open_engine(const std::string& path, kv::KvType kv_type,
                                            uint64_t budget_bytes = 0);

struct StoreSetup {
  std::string path;           // the SQLite file
  uint32_t idle_spill_ms = 0;
  std::string vfs = {};       // "" = SQLite's default
};
std::shared_ptr<engine::Engine> open_engine_with_store(const std::string& model,
                                                       kv::KvType kv_type, const StoreSetup& store,
                                                       uint64_t budget_bytes = 0);

engine::SessionOptions session_options(const std::string& system_prompt = "",
                                       const std::string& chat_template = "raw",
                                       const std::string& scope = "");

// One greedy turn of max_tokens (end tokens ignored, so every turn has that length).
engine::TurnStats greedy_turn(engine::Session& s, const std::string& text, uint32_t max_tokens);

// A GGUF file (written once per process) of a small random model: vocab 320, context 128.
const std::string& small_synthetic_model();

// A GGUF file (written once per process) of a random model whose context (2048) holds several
// CPU prefill chunks (512 tokens), each taking milliseconds: a stop requested from another
// thread is seen well before the last one, however the threads are scheduled.
const std::string& long_context_model();

// An engine on long_context_model() with INT8 KV and one thread, so that a core is left for
// a thread that asks a session to stop.
std::shared_ptr<engine::Engine> open_long_context_engine();

// Runs `work` with the right to use `s`, while another thread asks `s` to stop over and over
// (from before `work` starts until it ends); the status of the Error it threw, ok when none.
Status run_while_stopping(engine::Session& s, const std::function<void()>& work);

// `message` answered by `rewound` (4 greedy tokens), then its reply rewound: the conversation
// a stop leaves. Then the same message sent to `stopped` while another thread asks it to stop;
// the status that send ended with, and its figures.
struct StoppedSend {
  Status status = Status::ok;
  engine::TurnStats stats;
};
StoppedSend send_stopped_beside_rewound(engine::Session& stopped, engine::Session& rewound,
                                        const std::string& message);

// About 200 tokens of the kind of text stories260K knows.
std::string story_system_prompt();

}  // namespace parley::test
