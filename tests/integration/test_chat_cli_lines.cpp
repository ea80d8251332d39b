// parley-chat's console reading lines it cannot act on as typed: empty alternatives to score,
// a blank /exchange message, a NUL byte, a message too long for any conversation, words after
// a command that takes none, and Ctrl-C at the prompt of a terminal. Each is answered, and
// changes nothing. And lines as typed: blanks before a command, a tab after its name, a
// byte-order mark before the first.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "chat_cli_support.h"
#include "support/shared_assets.h"
#include "support/shell.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// "* ID  N turns, ..." of /sessions: N for the current conversation; -1 when not listed.
int current_turns(const std::string& text) {
  const size_t line = text.rfind("\n* ");
  if (line == std::string::npos) return -1;
  const size_t gap = text.find("  ", line + 3);
  return gap == std::string::npos ? -1 : std::stoi(text.substr(gap + 2));
}

}  // namespace

TEST_CASE("console: /score and /score-next refuse empty alternatives, and print no nan") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(gguf,
                                     "Once upon a time\n/score-next blue | \n/score-next | blue\n"
                                     "/score Once | there | \n/score Once |\n"
                                     "/score-next blue | named Lily.\n/sessions\n");
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "usage: /score-next TEXT | TEXT ...: a text may not be empty\n") == 2);
  CHECK(count(r.out, "usage: /score MESSAGE | REPLY | REPLY ...: a reply may not be empty\n") ==
        2);
  CHECK(count(r.out, "(log-probability of each") == 1);  // the last one only
  CHECK(r.out.find("nan") == std::string::npos);
  CHECK(current_turns(r.out) == 2);
}

TEST_CASE("console: /exchange refuses a blank message, as a blank line says nothing") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(gguf,
                                     "/exchange | \n/exchange   | a reply\n/sessions\n"
                                     "/exchange Tell me | \n/sessions\n");
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "usage: /exchange USER MESSAGE | REPLY: the message may not be blank\n") ==
        2);
  const size_t added = r.out.find("(added: a message and its reply)\n");
  REQUIRE(added != std::string::npos);
  CHECK(current_turns(r.out.substr(0, added)) == 0);
  CHECK(current_turns(r.out) == 2);  // a written reply may be empty
}

TEST_CASE("console: a line holding a NUL byte is refused whole") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string file = (dir / "chat.json").string();
  // printf's \0 puts the NUL in: a message, a /new id and an /export path, each cut short by
  // it once.
  const ShellRun r = run_shell("printf 'Once\\0upon a time\\n/new x\\0y\\n/export " + file +
                               "\\0z\\n/sessions\\n' | " + raw_chat_command(gguf) + " 2>&1");
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "(line ignored: it holds a NUL byte, which no message or command can)\n") ==
        3);
  CHECK(current_turns(r.out) == 0);
  CHECK(r.out.find("(session x)") == std::string::npos);
  CHECK(r.out.find("exported") == std::string::npos);
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("console: a full context's hint fits what filled it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  std::string too_long;
  for (int i = 0; i < 20; ++i) too_long += "the cat ran ";  // more than 40 tokens
  const std::string others_hint = "/reset or /new starts another";
  // An empty conversation: the message alone is too long, and nothing else would help.
  const ShellRun alone = run_raw_console(gguf, too_long + "\n/sessions\n", "--ctx 40");
  CHECK(alone.out.find("(PARLEY_E_CONTEXT_FULL)") != std::string::npos);
  CHECK(alone.out.find("(the message alone is too long for the context") != std::string::npos);
  CHECK(alone.out.find(others_hint) == std::string::npos);
  CHECK(current_turns(alone.out) == 0);
  // Also after a system prompt, which is no message.
  const ShellRun prompted = run_raw_console(gguf, too_long + "\n", "--ctx 40 -s 'Be kind.'");
  CHECK(prompted.out.find("(the message alone is too long for the context") != std::string::npos);
  // Dropping the older exchanges was tried already.
  const ShellRun dropping = run_raw_console(gguf, "Once upon a time\n" + too_long + "\n",
                                            "--ctx 40 --overflow drop-oldest");
  CHECK(dropping.out.find("(the message does not fit even after dropping the older exchanges") !=
        std::string::npos);
  CHECK(dropping.out.find("--overflow drop-oldest forgets") == std::string::npos);
  // A conversation with messages, which may drop: the hint as before.
  const ShellRun full = run_raw_console(gguf, "Once upon a time\n" + too_long + "\n", "--ctx 40");
  CHECK(full.out.find("(the conversation fills the context: " + others_hint) !=
        std::string::npos);
}

TEST_CASE("console: a command may follow blanks and end at a tab; // starts a message") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(gguf,
                                     "  /new a\n\t/new\tb\n/sessions\n"
                                     "  //new c\n/sessions\n /switch  a \n /quit\n"
                                     "/new never\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("unknown command") == std::string::npos);
  CHECK(r.out.find("(session a)\n(session b)\n") != std::string::npos);
  const size_t listed = r.out.find("* b  0 turns");
  REQUIRE(listed != std::string::npos);
  // "  //new c" is the message "  /new c": b has it and its reply; no session c.
  CHECK(r.out.find("* b  2 turns", listed) != std::string::npos);
  CHECK(r.out.find("(session c)") == std::string::npos);
  CHECK(r.out.find("(session a)", listed) != std::string::npos);
  CHECK(r.out.find("(session never)") == std::string::npos);  // " /quit" left before it
}

TEST_CASE("console: words after a command that takes none are refused, not ignored") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const char* bare[] = {"/help",  "/stats",   "/suspend", "/reset", "/sessions",
                        "/retry", "/prepare", "/quit",    "/exit"};
  std::string input = "Once upon a time\n";
  for (const char* command : bare) input += std::string(command) + " now\n";
  const ShellRun r = run_raw_console(gguf, input + "/sessions\n");
  CHECK(r.exit_code == 0);
  for (const char* command : bare) {
    CAPTURE(command);
    CHECK(count(r.out, "usage: " + std::string(command) + " (nothing after it)\n") == 1);
  }
  CHECK(r.out.find("(new conversation)") == std::string::npos);
  CHECK(r.out.find("/system TEXT") == std::string::npos);  // no /help text
  CHECK(current_turns(r.out) == 2);                        // neither /reset nor /quit ran
}

TEST_CASE("console: /help names /exit and how a line becomes a command") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun help = run_raw_console(gguf, "/help\n");
  CHECK(help.out.find("/quit, /exit   leave") != std::string::npos);
  CHECK(help.out.find("A line whose first non-blank character is / is a command") !=
        std::string::npos);
  CHECK(help.out.find("(//x sends /x)") != std::string::npos);
}

TEST_CASE("console: a UTF-8 byte-order mark before the first line is not part of it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const ShellRun r = run_raw_console(gguf, "\xEF\xBB\xBF/help\n/sessions\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("/help          this text") != std::string::npos);
  CHECK(current_turns(r.out) == 0);  // /help was not sent as a message
}

TEST_CASE("console: a send or /continue refused before any reply adds no line to stdout") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  std::string too_long;
  for (int i = 0; i < 20; ++i) too_long += "the cat ran ";  // more than 40 tokens
  const std::string stdout_only = " 2>/dev/null";
  const ShellRun r = run_shell("printf '%s' " + quote("/continue\n" + too_long + "\n") + " | " +
                               raw_chat_command(gguf, "--ctx 40") + stdout_only);
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  // Both were refused, on stderr.
  const ShellRun both = run_raw_console(gguf, "/continue\n" + too_long + "\n", "--ctx 40");
  CHECK(count(both.out, "parley-chat: error: continue failed: ") == 1);
  CHECK(count(both.out, "parley-chat: error: send failed: ") == 1);
  CHECK(both.out.rfind("parley-chat: error: continue failed: ", 0) == 0);
}

TEST_CASE("console: Ctrl-C at a terminal's prompt says how to leave, and asks again") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SCRIPT_OR_SKIP();
  TempDir dir;
  const std::string out = quote((dir / "out.txt").string());
  // Half a line typed, then Ctrl-C (the terminal turns \003 into SIGINT), then /sessions.
  const std::string typist = until_prompts(out, 1) + "printf 'Once'; sleep 0.2; printf '\\003'; " +
                             until_prompts(out, 2) + "printf '/sessions\\n'; " +
                             until_prompts(out, 3) + "printf '/quit\\n'; sleep 0.5";
  const ShellRun r = run_on_terminal(raw_chat_command(gguf), typist, out);
  CHECK(r.exit_code == 0);
  const size_t hint = r.out.find("(Ctrl-D or /quit leaves)");
  REQUIRE(hint != std::string::npos);
  CHECK(r.out.find("] > /sessions", hint) != std::string::npos);
  CHECK(current_turns(r.out) == 0);  // the half-typed line was dropped, not sent
}

#endif  // PARLEY_CHAT_EXE
