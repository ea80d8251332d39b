// parley-chat with --store keeps what was said, and nothing else: a conversation a run started
// and never spoke in is not left in the store, and a one-shot run names its conversation only
// once it holds the turn.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
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

// The names in `dir` that start with `prefix`.
std::vector<std::string> names_starting(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

// A console on the stored conversation A whose second message the store refuses: after its
// first one, another run adds a turn to A. `rest` follows that message on stdin; the console's
// stdout and stderr together, and its exit status.
ShellRun run_refused_console(const fs::path& model, const fs::path& store,
                             const std::string& rest) {
  const std::string chat = std::string(PARLEY_CHAT_EXE) + " -m " + quote(model.string()) +
                           " --store " + quote(store.string()) +
                           " --template raw --temp 0 -n 4 --session A";
  const std::string out = quote(store.string() + ".out");
  // Its output's second line ends the first reply (the first says A was reopened).
  const std::string feed =
      "echo 'console one'; i=0; until [ \"$(wc -l 2>/dev/null < " + out +
      ")\" -ge 2 ] 2>/dev/null || [ $i -ge 600 ]; do " + "i=$((i+1)); sleep 0.05; done; " + chat +
      " -p other >/dev/null 2>&1; echo 'console two'; printf '%s' " + quote(rest);
  REQUIRE(run_shell(chat + " -p first >/dev/null 2>&1").exit_code == 0);
  return run_shell("{ " + feed + "; } | " + chat + " > " + out + " 2>&1; rc=$?; cat " + out +
                   "; exit $rc");
}

// A console on the stored conversation A in `folder`/chat.db whose folder is renamed after the
// first reply, so the store refuses the next turn and nothing can be written beside it; the
// console runs with TMPDIR=`tmpdir`. Its stdout and stderr together, and its exit status.
ShellRun run_console_losing_folder(const fs::path& model, const fs::path& folder,
                                   const fs::path& tmpdir) {
  const fs::path store = folder / "chat.db";
  const std::string chat = std::string(PARLEY_CHAT_EXE) + " -m " + quote(model.string()) +
                           " --store " + quote(store.string()) +
                           " --template raw --temp 0 -n 4 --session A";
  const std::string out = quote(folder.string() + ".out");
  const std::string feed = "echo 'console one'; i=0; until [ \"$(wc -l 2>/dev/null < " + out +
                           ")\" -ge 2 ] 2>/dev/null || [ $i -ge 600 ]; do i=$((i+1)); sleep 0.05; "
                           "done; mv " +
                           quote(folder.string()) + " " + quote(folder.string() + "-gone") +
                           "; echo 'console two'";
  REQUIRE(run_shell(chat + " -p first >/dev/null 2>&1").exit_code == 0);
  return run_shell("{ " + feed + "; } | TMPDIR=" + quote(tmpdir.string()) + " " + chat + " > " +
                   out + " 2>&1; rc=$?; cat " + out + "; exit $rc");
}

}  // namespace

TEST_CASE("store: turns the store refuses go to a file beside it as the conversation closes") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const fs::path store = dir / "chat.db";
  const std::string saved =
      "the store refused the turns of session A, so they are not stored "
      "there; the conversation is saved in " +
      store.string() + ".unsaved-A-";
  // At the end of the run: said, saved, and the run fails.
  const ShellRun at_exit = run_refused_console(gguf, store, "");
  CHECK(at_exit.exit_code == 1);
  CHECK(at_exit.out.find("send failed") != std::string::npos);
  CHECK(at_exit.out.find(saved) != std::string::npos);
  const auto files = names_starting(dir.path(), "chat.db.unsaved-A-");
  REQUIRE(files.size() == 1);
  // Every turn is in it, the refused one too, and /import brings it back under a new id.
  const std::string file = (dir / files[0]).string();
  const ShellRun back = run_store_console(gguf, store, "/import " + file + " A2\n");
  CHECK(back.exit_code == 0);
  CHECK(back.out.find("(imported A2: 6 messages from " + file + ")") != std::string::npos);
  // At /close: said before the console goes on; a later exit saves nothing again.
  const ShellRun at_close = run_refused_console(gguf, dir / "two.db", "/new B\n/close A\n");
  CHECK(at_close.exit_code == 1);
  const size_t said = at_close.out.find("the store refused the turns of session A");
  REQUIRE(said != std::string::npos);
  CHECK(said < at_close.out.find("(closed A)"));
  CHECK(names_starting(dir.path(), "two.db.unsaved-A-").size() == 1);
  // A conversation the store took: nothing said, no file, status 0.
  const ShellRun fine = run_store_console(gguf, dir / "three.db", "Once upon a time\n");
  CHECK(fine.exit_code == 0);
  CHECK(fine.out.find("refused") == std::string::npos);
  CHECK(names_starting(dir.path(), "three.db.unsaved").empty());
}

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

// What this run said is not all the store holds: another run may speak in the same
// conversation meanwhile, and what it stored stays.
TEST_CASE("store: a console that said nothing keeps a conversation another run spoke in") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SCRIPT_OR_SKIP();
  TempDir dir;
  const fs::path store = dir / "chat.db";
  const std::string chat = std::string(PARLEY_CHAT_EXE) + " -m " + quote(gguf.string()) +
                           " --store " + quote(store.string()) +
                           " --template raw --temp 0 -n 8 --session story";
  const std::string out = quote((dir / "out.txt").string());
  // The console starts `story` and waits at its prompt while a one-shot run stores an exchange
  // in it; then Ctrl-D.
  const std::string typist = until_prompts(out, 1) + chat +
                             " -p 'Once upon a time' >/dev/null 2>&1; printf '\\004'; sleep 0.5";
  run_on_terminal(chat, typist, out);
  const ShellRun listing = run_store_console(gguf, store, "/sessions\n", "--session story");
  CHECK(listing.out.rfind("(session story: 2 turns from the store)\n", 0) == 0);

  // So too for a conversation /new started and /close closes.
  const fs::path other = dir / "other.db";
  const std::string flags =
      "--store " + quote(other.string()) + " --template raw -n 8 -m " + quote(gguf.string()) + " ";
  const std::string out2 = quote((dir / "out2.txt").string());
  const std::string one_shot =
      std::string(PARLEY_CHAT_EXE) + " " + flags + "--session b -p 'Once upon a time'";
  const std::string closer = until_prompts(out2, 1) + "printf '/new b\\n'; " +
                             until_prompts(out2, 2) + one_shot + " >/dev/null 2>&1; " +
                             "printf '/close b\\n'; " + until_prompts(out2, 3) +
                             "printf '/quit\\n'; sleep 0.5";
  run_on_terminal(std::string(PARLEY_CHAT_EXE) + " " + flags + "--session a", closer, out2);
  const ShellRun after = run_store_console(gguf, other, "/sessions\n", "--session b");
  CHECK(after.out.rfind("(session b: 2 turns from the store)\n", 0) == 0);
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

TEST_CASE("store: refused turns that cannot go beside the store go to $TMPDIR, else to stderr") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string refused = "the store refused the turns of session A";
  // The temporary folder takes the file.
  fs::create_directories(dir / "one");
  fs::create_directories(dir / "tmp");
  const ShellRun to_tmp = run_console_losing_folder(gguf, dir / "one", dir / "tmp");
  CHECK(to_tmp.exit_code == 1);
  CHECK(to_tmp.out.find(refused) != std::string::npos);
  CHECK(to_tmp.out.find("writing them to " + (dir / "one").string() + "/chat.db.unsaved-A-") !=
        std::string::npos);
  const auto files = names_starting(dir / "tmp", "chat.db.unsaved-A-");
  REQUIRE(files.size() == 1);
  const std::string file = (dir / "tmp" / files[0]).string();
  CHECK(to_tmp.out.find("the conversation is saved in " + file) != std::string::npos);
  // Every turn is in it, the refused one too.
  const ShellRun back = run_store_console(gguf, dir / "back.db", "/import " + file + " B\n");
  CHECK(back.out.find("(imported B: 6 messages from " + file + ")") != std::string::npos);

  // No temporary folder either: the conversation is printed between the marker lines.
  fs::create_directories(dir / "two");
  const ShellRun to_stderr = run_console_losing_folder(gguf, dir / "two", dir / "no-such");
  CHECK(to_stderr.exit_code == 1);
  const std::string begins = "----- parley conversation (JSON) -----\n";
  const size_t from = to_stderr.out.find(begins);
  const size_t to = to_stderr.out.find("\n----- end of the conversation -----");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const fs::path printed = dir / "printed.json";
  std::ofstream(printed) << to_stderr.out.substr(from + begins.size(), to - from - begins.size());
  const ShellRun again =
      run_store_console(gguf, dir / "again.db", "/import " + printed.string() + " C\n");
  CHECK(again.out.find("(imported C: 6 messages from " + printed.string() + ")") !=
        std::string::npos);
}

#endif  // PARLEY_CHAT_EXE
