// parley-chat's /export writing only where a conversation file may go: never onto the store or
// the files SQLite keeps beside it, the model or its folder (however a path names them), nor
// over a file that holds something other than a JSON object. Each refusal names the file and
// leaves it as it was.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat_cli_support.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/shell.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

// One /export line for each file.
std::string exports_of(const std::vector<std::string>& files) {
  std::string lines;
  for (const auto& file : files) lines += "/export " + file + "\n";
  return lines;
}

bool said(const ShellRun& r, const std::string& file, const std::string& why) {
  return r.out.find("parley-chat: error: cannot write " + file + ": " + why + "\n") !=
         std::string::npos;
}

// The messages of the conversation JSON in `path`; -1 when it holds none.
int exported_messages(const fs::path& path) {
  const auto json = nlohmann::json::parse(read_file(path), nullptr, false);
  if (json.is_discarded() || !json.contains("messages")) return -1;
  return int(json["messages"].size());
}

}  // namespace

TEST_CASE(
    "console: /export refuses the store, however a path names it, and the files beside "
    "it; the store keeps its conversations") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string store = (dir / "chat.db").string();
  const std::string store_flag = "--store " + quote(store);
  // A conversation of an earlier run, which an export over the store would lose.
  REQUIRE(run_shell(raw_chat_command(gguf, store_flag + " --session keep -p 'Once upon a time'") +
                    " 2>&1")
              .exit_code == 0);
  fs::create_symlink(store, dir / "link.db");
  fs::create_hard_link(store, dir / "hard.db");
  fs::create_directory(dir / "sub");
  const std::vector<std::string> spellings = {store, (dir / "sub" / ".." / "chat.db").string(),
                                              (dir / "link.db").string(),
                                              (dir / "hard.db").string()};
  // In WAL mode -wal and -shm are there while the console runs; -journal is not.
  const std::vector<std::string> companions = {store + "-wal", store + "-shm", store + "-journal"};
  const ShellRun r = run_raw_console(
      gguf, "Once upon a time\n" + exports_of(spellings) + exports_of(companions), store_flag);
  CHECK(r.exit_code == 0);
  for (const auto& file : spellings) {
    CHECK(said(r, file, "it is the conversation store (--store)"));
  }
  CHECK(said(r, companions[0], "it is the conversation store's -wal file (--store)"));
  CHECK(said(r, companions[1], "it is the conversation store's -shm file (--store)"));
  CHECK(said(r, companions[2], "it is the conversation store's -journal file (--store)"));
  CHECK(r.out.find("(exported") == std::string::npos);
  CHECK(read_file(store).rfind("SQLite format 3", 0) == 0);
  CHECK_FALSE(fs::exists(companions[2]));

  const ShellRun later = run_raw_console(gguf, "/sessions\n", store_flag);
  CHECK(later.exit_code == 0);
  const auto stored = stored_not_open(later.out);
  REQUIRE(stored);
  CHECK(std::count(stored->begin(), stored->end(), "keep") == 1);
  CHECK(stored->size() == 2);  // and the one the console above spoke in
}

TEST_CASE("console: /export refuses the model file and anything in a model's folder") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SHARED_OR_SKIP(hf, "models/stories260k/hf");
  TempDir dir;
  // Copies: an export that is not refused replaces what it names.
  const fs::path model = dir / "model.gguf", model_link = dir / "model-link.gguf";
  const fs::path folder = dir / "hf", config_link = dir / "config-link.json";
  fs::copy_file(gguf, model);
  fs::create_symlink(model, model_link);
  fs::copy(hf, folder);  // its files, read-only as they are there
  fs::permissions(folder, fs::perms::owner_all, fs::perm_options::add);
  fs::create_hard_link(folder / "config.json", config_link);
  const std::string config = read_file(folder / "config.json");
  REQUIRE(config.rfind("{", 0) == 0);  // JSON: only its place protects it

  const ShellRun on_file = run_raw_console(
      model, "Once upon a time\n" + exports_of({model.string(), model_link.string()}));
  CHECK(on_file.exit_code == 0);
  CHECK(said(on_file, model.string(), "it is the model (-m)"));
  CHECK(said(on_file, model_link.string(), "it is the model (-m)"));
  CHECK(read_file(model) == read_file(gguf));

  // A file the loader reads when it is there, such as added_tokens.json, changes the model.
  const std::string in_folder = "it is in the model's folder (-m), which /export never writes into";
  const fs::path added = folder / "." / "added_tokens.json";
  const ShellRun on_folder = run_raw_console(
      folder, "Once upon a time\n" + exports_of({(folder / "config.json").string(), added.string(),
                                                 config_link.string(), folder.string()}));
  CHECK(on_folder.exit_code == 0);
  CHECK(said(on_folder, (folder / "config.json").string(), in_folder));
  CHECK(said(on_folder, added.string(), in_folder));
  CHECK(said(on_folder, config_link.string(), in_folder));
  CHECK(said(on_folder, folder.string(), "it is the model (-m)"));
  CHECK(on_folder.out.find("(exported") == std::string::npos);
  CHECK(read_file(folder / "config.json") == config);
  CHECK_FALSE(fs::exists(added));
}

TEST_CASE("console: /export replaces an empty file or one holding a JSON object, and no other") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const fs::path notes = dir / "notes.txt", database = dir / "other.db";
  const fs::path empty = dir / "empty.json", earlier = dir / "earlier.json";
  const std::string notes_text = "my notes\n";
  const std::string database_bytes = std::string("SQLite format 3\0\x10\0", 18);
  write_bytes(notes, notes_text);
  write_bytes(database, database_bytes);
  write_bytes(empty, "");
  write_bytes(earlier, "\xEF\xBB\xBF \n {\"an earlier\": \"file\"}");  // a byte-order mark first
  const ShellRun r = run_raw_console(
      gguf, "Once upon a time\n" +
                exports_of({notes.string(), database.string(), empty.string(), earlier.string()}));
  CHECK(r.exit_code == 0);
  const std::string not_ours =
      "it is not a conversation file (it holds no JSON object), which /export never replaces";
  CHECK(said(r, notes.string(), not_ours));
  CHECK(said(r, database.string(), not_ours));
  CHECK(read_file(notes) == notes_text);
  CHECK(read_file(database) == database_bytes);
  CHECK(r.out.find(" to " + empty.string() + ")\n") != std::string::npos);
  CHECK(r.out.find(" to " + earlier.string() + ")\n") != std::string::npos);
  CHECK(exported_messages(empty) == 2);
  CHECK(exported_messages(earlier) == 2);
}

#endif  // PARLEY_CHAT_EXE
