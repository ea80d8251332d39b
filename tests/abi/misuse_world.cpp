// The handles the misuse rows work on.
#include <doctest/doctest.h>

#include <map>

#include "abi_fixture.h"
#include "misuse_matrix.h"
#include "support/shared_assets.h"

namespace parley::test {

struct MisuseWorld::Impl {
  TempDir dir;
  EngineHandle engine{tiny_chat_model()};
  std::vector<parley_session*> sessions;  // made by the current row
  std::vector<parley_engine*> engines;
  std::map<std::string, std::string> paths;
  int n_stores = 0;
};

MisuseWorld::MisuseWorld() : impl_(std::make_unique<Impl>()) {}
MisuseWorld::~MisuseWorld() { end_row(); }

parley_engine* MisuseWorld::engine() { return impl_->engine; }

parley_engine* MisuseWorld::engine_with_store() {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model().c_str();
  const std::string& store = temp_path("store-" + std::to_string(impl_->n_stores++) + ".db");
  o.store_path = store.c_str();
  o.n_threads = 1;
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&o, &e) == PARLEY_OK, parley_last_error());
  impl_->engines.push_back(e);
  return e;
}

namespace {

parley_session* new_session(parley_engine* e) {
  parley_session_options o;
  parley_session_options_init(&o);
  o.chat_template = "raw";
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_create(e, &o, &s) == PARLEY_OK, parley_last_error());
  return s;
}

}  // namespace

parley_session* MisuseWorld::session() {
  impl_->sessions.push_back(new_session(engine()));
  return impl_->sessions.back();
}

parley_session* MisuseWorld::session_with_turn() {
  parley_session* s = session();
  REQUIRE_MESSAGE(send_text(s, "a b") == PARLEY_OK, parley_last_error());
  return s;
}

const std::string& MisuseWorld::model() const { return tiny_chat_model(); }

const std::string& MisuseWorld::temp_path(const std::string& name) {
  return impl_->paths.try_emplace(name, (impl_->dir / name).string()).first->second;
}

void MisuseWorld::end_row() {
  for (parley_session* s : impl_->sessions) parley_session_close(s);
  for (parley_engine* e : impl_->engines) parley_engine_close(e);
  impl_->sessions.clear();
  impl_->engines.clear();
}

parley_generate_options quick_generate() { return greedy_options(2); }

parley_status send_text(parley_session* s, const char* text) {
  const parley_generate_options g = quick_generate();
  return parley_session_send(s, text, &g, nullptr, nullptr, nullptr);
}

}  // namespace parley::test
