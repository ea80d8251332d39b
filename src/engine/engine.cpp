#include "engine/engine.h"

#include <unistd.h>

#include <cstdio>
#include <random>

#include "common/error.h"
#include "common/log.h"

namespace parley::engine {
namespace {

// Automatic KV budget: a quarter of physical memory, so a desktop app never swaps for KV.
uint64_t automatic_kv_budget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t(1) << 30;
  return uint64_t(pages) * uint64_t(page_size) / 4;
}

std::string random_session_id() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "s-%08x%08x%08x", rd(), rd(), rd());
  return buf;
}

}  // namespace

Engine::Engine(const EngineOptions& options) : Engine(model::load_model(options.model_path), options) {}

Engine::Engine(std::unique_ptr<model::LoadedModel> model, const EngineOptions& options)
    : model_(std::move(model)) {
  const auto& cfg = model_->config;
  tokenizer_ = std::make_unique<text::Tokenizer>(model_->tokenizer);
  require(tokenizer_->n_vocab() == cfg.n_vocab, Status::bad_model,
          "the tokenizer has " + std::to_string(tokenizer_->n_vocab()) +
              " pieces but the model's vocab_size is " + std::to_string(cfg.n_vocab));

  context_length_ = options.context_length ? options.context_length : uint32_t(cfg.context_length);
  require(context_length_ <= uint32_t(cfg.context_length), Status::invalid_argument,
          "context_length " + std::to_string(options.context_length) +
              " exceeds the model's trained context of " + std::to_string(cfg.context_length));

  const kv::BlockLayout layout(options.kv_type,
                               kv::KvShape{cfg.n_layers, cfg.n_kv_heads, cfg.head_dim});
  pool_ = std::make_unique<kv::BlockPool>(
      layout, options.kv_budget_bytes ? options.kv_budget_bytes : automatic_kv_budget());
  default_template_ = text::template_from_model(cfg.chat_template);
  backend_ = backend::make_backend(options.device, *model_, options.n_threads);
  log::info_line("loaded '" + cfg.name + "' on " + backend_->name() + ", KV " +
                 kv::kv_type_name(kv_type()) + ", context " + std::to_string(context_length_));
}

Engine::~Engine() = default;

uint64_t Engine::prefix_root(std::string_view cache_scope) const {
  return kv::prefix_root(model_->fingerprint, kv_type(), cache_scope);
}

std::string Engine::reserve_session_id(const std::string& requested) {
  std::lock_guard lock(mutex_);
  if (requested.empty()) {
    for (;;) {
      std::string id = random_session_id();
      if (session_ids_.insert(id).second) return id;
    }
  }
  require(session_ids_.insert(requested).second, Status::invalid_argument,
          "session id '" + requested + "' is already in use");
  return requested;
}

void Engine::release_session_id(const std::string& id) {
  std::lock_guard lock(mutex_);
  session_ids_.erase(id);
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard lock(mutex_);
    s.sessions_active = uint32_t(session_ids_.size());
  }
  s.blocks = pool_->stats();
  s.kv_bytes_per_token = kv::kv_bytes_per_token(kv_type(), kv_shape());
  s.kv_bytes_resident = (s.blocks.used + s.blocks.cached) * pool_->layout().block_bytes();
  s.kv_budget_bytes = pool_->budget_bytes();
  return s;
}

}  // namespace parley::engine
