// Engine: owns the loaded model, its tokenizer and backend, and the bookkeeping that spans
// sessions (ids in use, KV memory). Thread-safe; sessions hold it by shared_ptr, so it lives
// until the last of them closes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "backend/backend.h"
#include "kv/block_pool.h"
#include "model/model_loader.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace parley::engine {

struct EngineOptions {
  std::string model_path;
  std::string device = "auto";
  int32_t n_threads = 0;            // 0 = one per core
  kv::KvType kv_type = kv::KvType::int8;
  uint64_t kv_budget_bytes = 0;     // 0 = automatic
  uint32_t context_length = 0;      // 0 = the model's
};

struct EngineStats {
  uint32_t sessions_active = 0;
  kv::PoolStats blocks;
  uint64_t kv_bytes_per_token = 0;
  uint64_t kv_bytes_resident = 0;  // blocks referenced by sessions, plus cached prefix blocks
  uint64_t kv_budget_bytes = 0;
};

class Engine {
 public:
  // Throws Error: see parley_engine_open.
  explicit Engine(const EngineOptions& options);
  // An engine over a model already in memory (options.model_path is not used).
  Engine(std::unique_ptr<model::LoadedModel> model, const EngineOptions& options);
  ~Engine();

  const model::LoadedModel& model() const { return *model_; }
  const model::ModelConfig& config() const { return model_->config; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }
  backend::Backend& backend() { return *backend_; }
  kv::KvType kv_type() const { return pool_->layout().type(); }
  kv::KvShape kv_shape() const { return pool_->layout().shape(); }
  kv::BlockPool& kv_pool() { return *pool_; }
  // Where a session's chain of prefix blocks starts: the model, the KV format and the scope.
  uint64_t prefix_root(std::string_view cache_scope) const;
  uint32_t context_length() const { return context_length_; }
  text::TemplateKind default_template() const { return default_template_; }

  // Session ids are unique among the engine's live sessions.
  std::string reserve_session_id(const std::string& requested);  // "" = generate one
  void release_session_id(const std::string& id);

  EngineStats stats() const;

 private:
  std::unique_ptr<model::LoadedModel> model_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<kv::BlockPool> pool_;
  uint32_t context_length_ = 0;
  text::TemplateKind default_template_ = text::TemplateKind::raw;

  mutable std::mutex mutex_;  // guards the members below
  std::unordered_set<std::string> session_ids_;
};

}  // namespace parley::engine
