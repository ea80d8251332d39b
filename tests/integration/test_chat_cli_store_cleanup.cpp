// parley-chat with --store keeps what was said, and nothing else: a conversation a run started
// and never spoke in is not left in the store, and a one-shot run names its conversation only
// once it holds the turn.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "chat_cli_support.h"
#include "support/shared_assets.h"
#include "support/shell.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

// The console on the real model with a session store, greedy and short, `input` on stdin;
// stdout and stderr together. `flags` come first.
ShellRun run_store_console(const fs::path& model, const fs::path& store, const std::string& input,
                           const std::string& flags = "") {
  return run_shell("printf '%s' " + quote(input) + " | " + PARLEY_CHAT_EXE + " " + flags +
                   " --store " + quote(store.string()) + " -m " + quote(model.string()) +
                   " --template raw --temp 0 -n 8 2>&1");
}

}  // namespace

TEST_CASE("store: a conversation a console run started and said nothing in is not kept") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const fs::path store = dir / "chat.db";
  // The first conversation, quit at once.
  CHECK(run_store_console(gguf, store, "/sessions\n").exit_code == 0);
  // With a system prompt (that alone is not a word said): /new a, closed unused; b, spoken in;
  // c, replaced by /reset; the replacement and the first conversation, left at the end.
  const ShellRun second = run_store_console(
      gguf, store, "/new a\n/new b\nOnce upon a time\n/new c\n/reset\n/close a\n", "-s 'Be kind'");
  CHECK(second.exit_code == 0);
  CHECK(second.out.find("(closed a)") != std::string::npos);
  // --session NEWID, and a conversation spoken in and then rewound to nothing.
  CHECK(run_store_console(gguf, store, "/quit\n", "--session d").exit_code == 0);
  CHECK(run_store_console(gguf, store, "/new e\nThe cat\n/rewind 2\n").exit_code == 0);

  const ShellRun listing = run_store_console(gguf, store, "/sessions\n", "--session b");
  CHECK(listing.out.rfind("(session b: 3 turns from the store)\n", 0) == 0);
  const auto stored = stored_not_open(listing.out);
  REQUIRE(stored);
  CHECK(stored->empty());  // b is the only one, open here
  // Reopened from the store, b is kept even when this run says nothing in it.
  const ShellRun again = run_store_console(gguf, store, "/new x\n/sessions\n");
  const auto after = stored_not_open(again.out);
  REQUIRE(after);
  CHECK(*after == std::vector<std::string>{"b"});
}

TEST_CASE("store: a one-shot run names its new conversation only once the turn is kept") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string chat = std::string(PARLEY_CHAT_EXE) + " -m " + quote(gguf.string()) +
                           " --store " + quote((dir / "chat.db").string()) +
                           " --template raw --temp 0 -n 8";
  // Refused before its turn: not kept, and never announced as stored.
  const ShellRun refused = run_shell(chat + " -p \"$(printf 'bad \\377')\" 2>&1");
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.find("was not kept: nothing was said in it") != std::string::npos);
  CHECK(refused.out.find("stored as session") == std::string::npos);
  // Kept: the id comes after the reply (stdout is flushed as it streams).
  const ShellRun kept = run_shell(chat + " -p 'Once upon a time' 2>&1");
  CHECK(kept.exit_code == 0);
  const size_t reply = kept.out.find(", there was a little girl");
  const size_t announced = kept.out.find("parley-chat: stored as session ");
  REQUIRE(reply != std::string::npos);
  REQUIRE(announced != std::string::npos);
  CHECK(reply < announced);
  CHECK(kept.out.find("was not kept") == std::string::npos);
}

#endif  // PARLEY_CHAT_EXE
