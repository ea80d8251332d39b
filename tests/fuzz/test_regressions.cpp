// Every file of the regression corpus gives exactly the status MANIFEST documents, with a
// message that names the field: model files through parley_engine_open (a GGUF file as is, a
// safetensors file as model.safetensors of the tiny model's Hugging Face directory), KV blobs
// through the codec (the store's only reader of them) and, in a real store, through a
// session's restore, which must recompute the KV (kv_source REBUILT) and carry on.
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "files/fuzz_files.h"
#include "parley.h"
#include "store/kv_codec.h"
#include "support/c_api_options.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"

namespace fs = std::filesystem;
using namespace parley::test;

namespace {

const fs::path kRegressions = fs::path(PARLEY_FUZZ_DIR) / "regressions";

// A small KV budget: the automatic one sizes a pool for a real model, which is slow to set up
// under the sanitizers and more than this tiny model needs.
constexpr uint64_t kKvBudget = 1u << 20;

struct Entry {
  std::string file, status, outcome, field, bug;
};

std::vector<Entry> manifest() {
  std::ifstream in(kRegressions / "MANIFEST");
  REQUIRE_MESSAGE(in, "no MANIFEST in " << kRegressions);
  std::vector<Entry> entries;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream cols(line);
    Entry e;
    std::getline(cols, e.file, '\t');
    std::getline(cols, e.status, '\t');
    std::getline(cols, e.outcome, '\t');
    std::getline(cols, e.field, '\t');
    std::getline(cols, e.bug, '\t');
    REQUIRE_MESSAGE(!e.bug.empty(), "malformed MANIFEST line: " << line);
    entries.push_back(e);
  }
  return entries;
}

struct Outcome {
  std::string status;  // without PARLEY_E_ (OK for success)
  std::string message;
};

std::string short_name(parley_status st) {
  std::string name = parley_status_name(st);
  for (const char* prefix : {"PARLEY_E_", "PARLEY_"}) {
    if (name.rfind(prefix, 0) == 0) return name.substr(std::strlen(prefix));
  }
  return name;
}

Outcome open_model(const std::string& path, const char* store = nullptr) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = path.c_str();
  o.store_path = store;
  o.device = "cpu";
  o.n_threads = 1;
  o.kv_budget_bytes = kKvBudget;
  parley_engine* e = reinterpret_cast<parley_engine*>(uintptr_t(0x1));
  const parley_status st = parley_engine_open(&o, &e);
  Outcome r{short_name(st), st ? parley_last_error() : ""};
  if (st != PARLEY_OK) CHECK_MESSAGE(e == nullptr, "*out must be NULL on failure");
  parley_engine_close(e);
  return r;
}

// The tiny model's Hugging Face directory with `weights` as its model.safetensors.
Outcome open_hf_with(const TempDir& dir, const std::string& weights) {
  write_bytes(dir / "config.json", tiny_hf_config_json());
  write_bytes(dir / "tokenizer.model", tiny_tokenizer_model());
  write_bytes(dir / "model.safetensors", weights);
  return open_model(dir.path().string());
}

Outcome decode_blob(const std::string& bytes) {
  const parley::kv::BlockLayout layout(kRegressionKvType, kRegressionKvShape);
  std::vector<std::byte> block(layout.block_bytes());
  try {
    parley::store::decode_kv_block({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()},
                                   layout, kRegressionFingerprint, block.data());
    return {"OK", ""};
  } catch (const parley::Error& e) {
    return {short_name(parley_status(e.status())), e.what()};
  }
}

// Replaces every stored KV blob (prefix blocks and session tails) with `blob`, given the
// model fingerprint of the blobs it replaces when it carries the regressions' stand-in (so
// that the restore reaches the check the blob is about).
void replace_blobs(const std::string& db, std::string blob) {
  sqlite3* conn = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &conn) == SQLITE_OK);
  sqlite3_stmt* read = nullptr;
  REQUIRE(sqlite3_prepare_v2(conn, "SELECT blob FROM prefix_blocks LIMIT 1", -1, &read, nullptr) ==
          SQLITE_OK);
  REQUIRE(sqlite3_step(read) == SQLITE_ROW);
  REQUIRE(sqlite3_column_bytes(read, 0) >= 44);
  const char* stored = static_cast<const char*>(sqlite3_column_blob(read, 0));
  uint64_t stand_in = 0;
  if (blob.size() >= 44) std::memcpy(&stand_in, blob.data() + 36, 8);
  if (stand_in == kRegressionFingerprint) blob.replace(36, 8, stored + 36, 8);
  sqlite3_finalize(read);
  for (const char* sql : {"UPDATE prefix_blocks SET blob = ?", "UPDATE kv_sessions SET tail_blob = ?"}) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(conn, sql, -1, &st, nullptr) == SQLITE_OK);
    sqlite3_bind_blob(st, 1, blob.empty() ? "" : blob.data(), int(blob.size()), SQLITE_TRANSIENT);
    REQUIRE(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
  }
  sqlite3_close(conn);
}

parley_turn_stats send(parley_session* s, const char* text, parley_status expected = PARLEY_OK) {
  const parley_generate_options g = greedy_options(2);
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  const parley_status st = parley_session_send(s, text, &g, nullptr, nullptr, &stats);
  REQUIRE_MESSAGE(st == expected, parley_last_error());
  return stats;
}

parley_engine* engine_with_store(const std::string& model, const std::string& db) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = model.c_str();
  o.store_path = db.c_str();
  o.device = "cpu";
  o.n_threads = 1;
  o.kv_budget_bytes = kKvBudget;
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&o, &e) == PARLEY_OK, parley_last_error());
  return e;
}

// Log lines go to `*lines` while it is set. The callback is installed once, while no engine
// is open (as parley_set_log_callback asks), and stays: replacing it would leak the old one.
std::mutex g_log_mutex;
std::vector<std::string>* g_log_lines = nullptr;

void capture_log(std::vector<std::string>* lines) {
  static const bool installed = [] {
    parley_set_log_callback(
        [](int, const char* msg, void*) {
          std::lock_guard lock(g_log_mutex);
          if (g_log_lines) g_log_lines->push_back(msg);
        },
        nullptr);
    return true;
  }();
  (void)installed;
  std::lock_guard lock(g_log_mutex);
  g_log_lines = lines;
}

struct Restore {
  int32_t kv_source = -1;
  std::vector<std::string> log;  // what the engine logged meanwhile
};

// A stored conversation (one full KV block and a tail) whose KV is then replaced by `blob`:
// the next turn must recompute it from the transcript, and log why.
Restore restore_with(const std::string& model, const std::string& blob) {
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  {
    parley_engine* e = engine_with_store(model, db);
    parley_session_options o;
    parley_session_options_init(&o);
    o.id = "victim";
    o.chat_template = "raw";
    parley_session* s = nullptr;
    REQUIRE(parley_session_create(e, &o, &s) == PARLEY_OK);
    send(s, "a a a a a a a a a a a a a a a a a a a a a");
    REQUIRE(parley_session_suspend(s) == PARLEY_OK);
    parley_session_close(s);
    parley_engine_close(e);
  }
  replace_blobs(db, blob);
  Restore r;
  capture_log(&r.log);
  parley_engine* e = engine_with_store(model, db);
  parley_session* s = nullptr;
  REQUIRE_MESSAGE(parley_session_open(e, "victim", &s) == PARLEY_OK, parley_last_error());
  r.kv_source = send(s, "b b").kv_source;
  parley_session_close(s);
  parley_engine_close(e);
  capture_log(nullptr);
  return r;
}

bool any_names(const std::vector<std::string>& lines, const std::string& field) {
  for (const std::string& l : lines) {
    if (l.find(field) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("regression corpus: MANIFEST lists every file, and there are at least 40") {
  std::set<std::string> listed;
  for (const Entry& e : manifest()) {
    CHECK_MESSAGE(listed.insert(e.file).second, e.file << " listed twice");
    CHECK_MESSAGE(fs::is_regular_file(kRegressions / e.file), e.file << " is missing");
  }
  for (const auto& f : fs::recursive_directory_iterator(kRegressions)) {
    if (!f.is_regular_file() || f.path().filename() == "MANIFEST") continue;
    const std::string rel = fs::relative(f.path(), kRegressions).generic_string();
    CHECK_MESSAGE(listed.count(rel), rel << " is not in MANIFEST");
  }
  MESSAGE(listed.size() << " regression files");
  CHECK(listed.size() >= 40);
}

TEST_CASE("regression corpus: the tiny model they break is valid in both formats") {
  TempDir dir;
  write_bytes(dir / "tiny.gguf", tiny_gguf_file());
  const Outcome gguf = open_model((dir / "tiny.gguf").string());
  CHECK_MESSAGE(gguf.status == "OK", gguf.message);
  TempDir hf;
  const Outcome st = open_hf_with(hf, tiny_safetensors_file());
  CHECK_MESSAGE(st.status == "OK", st.message);
}

TEST_CASE("regression corpus: every model file gives its documented status, naming the field") {
  size_t n = 0;
  for (const Entry& e : manifest()) {
    if (e.file.rfind("kv/", 0) == 0) continue;
    CAPTURE(e.file);
    CAPTURE(e.bug);
    const fs::path path = kRegressions / e.file;
    Outcome got;
    if (e.file.rfind("gguf/", 0) == 0) {
      got = open_model(path.string());
    } else {
      TempDir dir;
      got = open_hf_with(dir, read_file(path));
    }
    CHECK(got.status == e.status);
    CHECK_MESSAGE(got.message.find(e.field) != std::string::npos,
                  "message '" << got.message << "' does not name '" << e.field << "'");
    ++n;
  }
  MESSAGE(n << " model files checked");
}

TEST_CASE("regression corpus: every KV blob is refused by the codec and rebuilt on restore") {
  TempDir dir;
  const std::string model = (dir / "tiny.gguf").string();
  write_bytes(model, tiny_gguf_file());
  size_t n = 0;
  for (const Entry& e : manifest()) {
    if (e.file.rfind("kv/", 0) != 0) continue;
    CAPTURE(e.file);
    CAPTURE(e.bug);
    const std::string blob = read_file(kRegressions / e.file);
    const Outcome got = decode_blob(blob);
    CHECK(got.status == e.status);
    if (got.status != "OK") {  // OK: valid alone, wrong where it is stored
      CHECK_MESSAGE(got.message.find(e.field) != std::string::npos,
                    "message '" << got.message << "' does not name '" << e.field << "'");
    }
    REQUIRE(e.outcome == "REBUILT");
    const Restore r = restore_with(model, blob);
    CHECK(r.kv_source == PARLEY_KV_SOURCE_REBUILT);
    CHECK_MESSAGE(any_names(r.log, e.field), "no log line names '" << e.field << "'");
    ++n;
  }
  MESSAGE(n << " KV blobs checked");
}
