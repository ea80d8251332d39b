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

Engine::Engine(const EngineOptions& options) : kv_type_(options.kv_type) {
  model_ = model::load_model(options.model_path);
  const auto& cfg = model_->config;
  tokenizer_ = std::make_unique<text::Tokenizer>(model_->tokenizer);
  require(tokenizer_->n_vocab() == cfg.n_vocab, Status::bad_model,
          "the tokenizer has " + std::to_string(tokenizer_->n_vocab()) +
              " pieces but the model's vocab_size is " + std::to_string(cfg.n_vocab));

  context_length_ = options.context_length ? options.context_length : uint32_t(cfg.context_length);
  require(context_length_ <= uint32_t(cfg.context_length), Status::invalid_argument,
          "context_length " + std::to_string(options.context_length) +
              " exceeds the model's trained context of " + std::to_string(cfg.context_length));

  kv_budget_bytes_ = options.kv_budget_bytes ? options.kv_budget_bytes : automatic_kv_budget();
  default_template_ = text::template_from_model(cfg.chat_template);
  backend_ = backend::make_backend(options.device, *model_, options.n_threads);
  log::info_line("loaded '" + cfg.name + "' on " + backend_->name() + ", KV " +
                 kv::kv_type_name(kv_type_) + ", context " + std::to_string(context_length_));
}

Engine::~Engine() = default;

kv::KvShape Engine::kv_shape() const {
  const auto& cfg = model_->config;
  return kv::KvShape{cfg.n_layers, cfg.n_kv_heads, cfg.head_dim};
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

std::unique_ptr<kv::KvCache> Engine::allocate_kv(uint32_t capacity) {
  const uint64_t bytes = uint64_t(capacity) * kv::kv_bytes_per_token(kv_type_, kv_shape());
  {
    std::lock_guard lock(mutex_);
    require(kv_bytes_resident_ + bytes <= kv_budget_bytes_, Status::out_of_memory,
            "the KV budget of " + std::to_string(kv_budget_bytes_) + " bytes is exhausted (" +
                std::to_string(kv_bytes_resident_) + " in use, " + std::to_string(bytes) +
                " more needed); close sessions or raise kv_budget_bytes");
    kv_bytes_resident_ += bytes;
  }
  try {
    return std::make_unique<kv::KvCache>(kv_type_, kv_shape(), capacity);
  } catch (...) {
    std::lock_guard lock(mutex_);
    kv_bytes_resident_ -= bytes;
    throw;
  }
}

void Engine::release_kv(const kv::KvCache& kv) {
  std::lock_guard lock(mutex_);
  kv_bytes_resident_ -= kv.bytes();
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  EngineStats s;
  s.sessions_active = uint32_t(session_ids_.size());
  s.kv_bytes_per_token = kv::kv_bytes_per_token(kv_type_, kv_shape());
  s.kv_bytes_resident = kv_bytes_resident_;
  s.kv_budget_bytes = kv_budget_bytes_;
  return s;
}

}  // namespace parley::engine
