// parley-chat's console with session ids that a bare command argument cannot carry: blanks at
// their ends or in them, quotes, backslashes. Such an id is typed in double quotes, and the
// console shows it the same way, so that what it prints can be typed back.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
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

ShellRun run_store_console(const fs::path& model, const fs::path& store, const std::string& input,
                           const std::string& flags = "") {
  return run_raw_console(model, input, "--store " + quote(store.string()) + " " + flags);
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

bool contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

TEST_CASE("console ids: a quoted id reaches one with blanks at its ends; it is shown quoted") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(gguf,
                                     "/new \"  padded id \"\n/new plain\n/sessions\n"
                                     "/switch \"  padded id \"\n/switch   padded id  \n"
                                     "/close plain\n/sessions\n");
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "(session \"  padded id \")\n(session plain)\n"));
  CHECK(has(r.out, "\n  \"  padded id \"  0 turns, 0 tokens, "));
  CHECK(has(r.out, "\n* plain  0 turns, 0 tokens, "));
  // Typed back as shown, it switches; bare, its blanks are lost.
  CHECK(has(r.out, " stored\n(session \"  padded id \")\n"
                   "no open session 'padded id' (see /sessions)\n"));
  CHECK(has(r.out, "(closed plain)\n(session \"  padded id \")\n"));
  CHECK(has(r.out, "\n* \"  padded id \"  0 turns, 0 tokens, "));
}

TEST_CASE("console ids: in quotes \\\" is a quote and \\\\ a backslash; ids are shown so") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(gguf, R"x(/new "say \"hi\" \\ now"
/new a\b
/new "x"
/new "a\b c"
/sessions
/switch "say \"hi\" \\ now"
/switch "a\\b c"
/close "x"
)x");
  CHECK(r.exit_code == 0);
  // A backslash in a bare id is itself, and an id that needs no quotes is shown without.
  CHECK(has(r.out, R"x((session "say \"hi\" \\ now")
(session a\b)
(session x)
(session "a\\b c")
)x"));
  CHECK(has(r.out, "\n  \"say \\\"hi\\\" \\\\ now\"  0 turns, "));
  CHECK(has(r.out, "\n  a\\b  0 turns, "));
  CHECK(has(r.out, "\n* \"a\\\\b c\"  0 turns, "));
  CHECK(has(r.out, R"x((session "say \"hi\" \\ now")
(session "a\\b c")
(closed x)
)x"));
}

TEST_CASE("console ids: a quoted id not closed, or with text after it, is refused") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(
      gguf, "/new \"open\n/new \"a\" b\n/switch \"a\nOnce upon a time\n/sessions\n");
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "cannot read the id \"open: a quoted id ends at its closing quote"));
  CHECK(has(r.out, "cannot read the id \"a\" b: "));
  CHECK(has(r.out, "cannot read the id \"a: "));
  CHECK(!has(r.out, "(session "));  // nothing was started or switched to
  CHECK(has(r.out, "  2 turns, "));  // the message went to the first conversation
}

TEST_CASE("console ids: /help says how to quote an id") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(gguf, "/help\n");
  CHECK(has(r.out, "An ID with blanks in it or at its ends goes in double quotes"));
  CHECK(has(r.out, "/open \"  my id \" (inside the quotes \\\" is a quote and \\\\ a backslash)"));
}

TEST_CASE("store ids: a stored id /sessions shows quoted opens and deletes as shown") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const fs::path store = dir / "chat.db";
  const ShellRun first = run_store_console(
      gguf, store, "Once upon a time\n/new \"other \\\"id\\\"\"\nThe cat\n/quit\n",
      "--session '  spaced '");
  REQUIRE(first.exit_code == 0);

  const ShellRun listing = run_store_console(gguf, store, "/sessions\n", "--session third");
  const auto stored = stored_not_open(listing.out);
  REQUIRE(stored);
  REQUIRE(stored->size() == 2);
  CHECK(contains(*stored, "\"  spaced \""));
  CHECK(contains(*stored, "\"other \\\"id\\\"\""));

  // What /sessions showed, typed back.
  std::string input;
  for (const auto& shown : *stored) {
    input += (shown.starts_with("\"  ") ? "/open " : "/delete ") + shown + "\n";
  }
  const ShellRun back = run_store_console(gguf, store, input + "/sessions\n");
  CHECK(back.exit_code == 0);
  CHECK(has(back.out, "(session \"  spaced \": 2 turns from the store)\n"));
  CHECK(has(back.out, "(deleted \"other \\\"id\\\"\")\n"));
  CHECK(has(back.out, "\n* \"  spaced \"  2 turns, "));
  const auto left = stored_not_open(back.out);
  REQUIRE(left);
  CHECK(left->empty());
}

TEST_CASE("console ids: /import FILE \"ID\" takes the quoted id that ends the line") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string file = (dir / "my story.json").string();
  // FILE holds a blank, so the id is what follows the last blank unless it is quoted.
  const std::string input = "Once upon a time\n/export " + file + "\n" +
                            "/import " + file + " \"  copy one \"\n" +
                            "/import " + file + " copy2\n" +
                            "/import " + file + " \"unclosed\n/sessions\n";
  const ShellRun r = run_raw_console(gguf, input);
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "(imported \"  copy one \": 2 messages from " + file +
                       ")\n(session \"  copy one \")\n"));
  CHECK(has(r.out, "(imported copy2: 2 messages from " + file + ")\n(session copy2)\n"));
  CHECK(has(r.out, "cannot read the id \"unclosed: "));
  CHECK(has(r.out, "\n  \"  copy one \"  2 turns, "));
}

TEST_CASE("console ids: the prompt shows the current id as commands take it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SCRIPT_OR_SKIP();
  TempDir dir;
  const std::string out = quote((dir / "out.txt").string());
  const ShellRun r = run_on_terminal(raw_chat_command(gguf, "--session '  padded '"),
                                     until_prompts(out, 1) + "printf '/quit\\n'", out);
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "[\"  padded \"] > "));
}

#endif  // PARLEY_CHAT_EXE
