// parley-chat as scripts and people use it. One-shot mode: stdout holds the reply and the ids
// line, diagnostics go to stderr, the exit status says whether it worked. The console: messages
// and /commands piped into stdin, several conversations in one run.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "golden.h"
#include "support/shared_assets.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;

namespace {

struct Run {
  int exit_code = -1;
  std::string out;  // stdout only, or stdout and stderr as they were written
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

enum class Stderr { dropped, merged };

// Runs a program with `input` on its stdin; collects its stdout (and stderr when merged).
Run run_program(const std::string& exe, const std::string& args, const std::string& input = "",
                Stderr err = Stderr::dropped) {
  const std::string cmd = "printf '%s' " + quote(input) + " | " + exe + " " + args +
                          (err == Stderr::merged ? " 2>&1" : " 2>/dev/null");
  Run r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Run run_chat(const std::string& args, const std::string& input = "") {
  return run_program(PARLEY_CHAT_EXE, args, input);
}

// The console on the real model, greedy and short, with its error lines in the output.
Run run_console(const std::filesystem::path& model, const std::string& input) {
  return run_program(PARLEY_CHAT_EXE,
                     "-m " + quote(model.string()) + " --template raw --temp 0 -n 8", input,
                     Stderr::merged);
}

// One line of /sessions: "* a  4 turns, 24 tokens, 15360 KV bytes".
struct ListedSession {
  bool current = false;
  unsigned turns = 0;
  unsigned tokens = 0;
};

// The /sessions lines found in `text`, by id (a later line for an id wins).
std::map<std::string, ListedSession> listed_sessions(const std::string& text) {
  std::map<std::string, ListedSession> found;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() < 3 || (line[0] != '*' && line[0] != ' ') || line[1] != ' ') continue;
    const size_t gap = line.find("  ", 2);
    if (gap == std::string::npos) continue;
    ListedSession s;
    s.current = line[0] == '*';
    if (std::sscanf(line.c_str() + gap, " %u turns, %u tokens,", &s.turns, &s.tokens) != 2) {
      continue;
    }
    found[line.substr(2, gap - 2)] = s;
  }
  return found;
}

// The text between the first `from` at or after `pos` and the next `to`; "" when absent.
std::string text_between(const std::string& text, const std::string& from, const std::string& to,
                         size_t pos = 0) {
  const size_t begin = text.find(from, pos);
  if (begin == std::string::npos) return "";
  const size_t end = text.find(to, begin + from.size());
  if (end == std::string::npos) return "";
  return text.substr(begin + from.size(), end - begin - from.size());
}

// "last turn: P prompt tokens (R reused, C computed), G generated; ..." from /stats.
struct TurnFigures {
  unsigned prompt = 0, reused = 0, computed = 0, generated = 0;
};

TurnFigures turn_figures(const std::string& stats_line) {
  TurnFigures f;
  const int n = std::sscanf(stats_line.c_str(),
                            "last turn: %u prompt tokens (%u reused, %u computed), %u generated",
                            &f.prompt, &f.reused, &f.computed, &f.generated);
  REQUIRE(n == 4);
  return f;
}

std::string ids_line(const std::vector<int32_t>& ids) {
  std::string s = "ids:";
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

}  // namespace

TEST_CASE("one-shot greedy runs print the reference continuation and its ids") {
  PARLEY_SHARED_OR_SKIP(goldens_path, "golden/stories260k_greedy.jsonl");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SHARED_OR_SKIP(hf, "models/stories260k/hf");
  const auto goldens = read_greedy_goldens(goldens_path);
  for (const auto& model : {gguf, hf}) {
    for (const char* name : {"once_upon", "empty", "quote_sam"}) {
      const auto& g = *std::find_if(goldens.begin(), goldens.end(),
                                    [&](const GreedyGolden& x) { return x.name == name; });
      CAPTURE(model.string());
      CAPTURE(g.name);
      const std::vector<int32_t> first64(g.generated_ids.begin(), g.generated_ids.begin() + 64);
      const Run r = run_chat("-m " + quote(model.string()) +
                             " --kv f32 --template raw --temp 0 --ignore-eos -n 64 -p " +
                             quote(g.prompt) + " --print-ids");
      CHECK(r.exit_code == 0);
      // stdout: the reply, a newline, then the ids line.
      const size_t cut = r.out.rfind("\nids:");
      REQUIRE(cut != std::string::npos);
      CHECK(r.out.substr(cut + 1) == ids_line(first64) + "\n");
      const std::string reply = r.out.substr(0, cut);
      CHECK(!reply.empty());
      CHECK(g.full_text.find(reply) != std::string::npos);  // a prefix of the golden's text
    }
  }
}

TEST_CASE("errors exit with status 1 and keep stdout empty") {
  CHECK(run_chat("").exit_code == 1);
  CHECK(run_chat("--no-such-flag").exit_code == 1);
  const Run missing = run_chat("-m /nonexistent/model.gguf -p hi");
  CHECK(missing.exit_code == 1);
  CHECK(missing.out.empty());
  CHECK(run_chat("-m x --temp abc").exit_code == 1);
  CHECK(run_chat("--help").exit_code == 0);
  CHECK(run_chat("--version").out.rfind("parley ", 0) == 0);
}

TEST_CASE("the console reads messages and commands from stdin") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_chat("-m " + quote(gguf.string()) + " --template raw --temp 0 -n 8",
                         "/stats\n/help\nOnce upon a time\n/stats\n/nonsense\n/reset\n/quit\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("no turn yet") != std::string::npos);
  CHECK(r.out.find("/system TEXT") != std::string::npos);
  CHECK(r.out.find(", there was a little girl") != std::string::npos);
  CHECK(r.out.find("last turn: 5 prompt tokens (0 reused, 5 computed), 8 generated") !=
        std::string::npos);
  CHECK(r.out.find("KV: ") != std::string::npos);
  CHECK(r.out.find("unknown command /nonsense") != std::string::npos);
  CHECK(r.out.find("(new conversation)") != std::string::npos);
}

TEST_CASE("console sessions: /new and /switch keep two conversations apart") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/new a\nOnce upon a time\n/new b\n/switch a\nThe cat\n"
                                  "/sessions\n/switch b\n/sessions\n/quit\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("(session a)\n, there was a little girl\n") != std::string::npos);
  const size_t back_to_b = r.out.rfind("(session b)\n");
  REQUIRE(back_to_b != std::string::npos);

  // Both messages went to a; b, opened in between, is still empty.
  const auto while_in_a = listed_sessions(r.out.substr(0, back_to_b));
  REQUIRE(while_in_a.size() == 3);  // the console's first session, a and b
  CHECK(while_in_a.at("a").turns == 4);
  CHECK(while_in_a.at("a").current);
  CHECK(while_in_a.at("b").turns == 0);
  CHECK_FALSE(while_in_a.at("b").current);

  const auto while_in_b = listed_sessions(r.out.substr(back_to_b));
  CHECK(while_in_b.at("a").turns == 4);
  CHECK_FALSE(while_in_b.at("a").current);
  CHECK(while_in_b.at("b").current);
}

TEST_CASE("console sessions: a fork starts with its source's turns and, greedy, answers alike") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/new a\nOnce upon a time\n/fork b\n/sessions\n"
                                  "/switch b\nThe cat\n/switch a\nThe cat\n/sessions\n");
  CHECK(r.exit_code == 0);
  const size_t forked = r.out.find("(session b)\n");
  REQUIRE(forked != std::string::npos);

  const auto after_fork = listed_sessions(text_between(r.out, "(session b)\n", "(session b)\n"));
  CHECK(after_fork.at("a").turns == 2);
  CHECK(after_fork.at("b").turns == 2);
  CHECK(after_fork.at("b").current);

  // The same message on the same conversation, sampled greedily: the same reply.
  const std::string reply_b =
      text_between(r.out, "(session b)\n", "\n(session a)\n", forked + 1);
  const std::string reply_a =
      text_between(r.out, "(session a)\n", "\n", r.out.rfind("(session a)"));
  CHECK(reply_b.size() > 5);
  CHECK(reply_b == reply_a);
  const auto at_end = listed_sessions(r.out.substr(r.out.rfind("(session a)")));
  CHECK(at_end.at("a").tokens == at_end.at("b").tokens);
  CHECK(at_end.at("a").turns == 4);
  CHECK(at_end.at("b").turns == 4);
}

TEST_CASE("console sessions: /rewind drops messages, and refuses more than there are") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/new a\nOnce upon a time\nThe cat\n/rewind 2\n/sessions\n"
                                  "/rewind 99\n/rewind 0\n/rewind two\n/sessions\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("(rewound 2; 2 turns left)\n") != std::string::npos);
  const size_t refused = r.out.find("parley-chat: error: cannot rewind: ");
  REQUIRE(refused != std::string::npos);
  CHECK(r.out.find("cannot rewind 99 turns", refused) != std::string::npos);  // the library's word
  CHECK(r.out.find("(PARLEY_E_INVALID_ARGUMENT)", refused) != std::string::npos);
  const std::string usage = "usage: /rewind N (N: how many messages to drop, at least 1)\n";
  CHECK(r.out.find(usage + usage) != std::string::npos);  // for 0 and for "two"

  CHECK(listed_sessions(r.out.substr(0, refused)).at("a").turns == 2);
  CHECK(listed_sessions(r.out.substr(refused)).at("a").turns == 2);  // the refusals changed nothing
}

TEST_CASE("console sessions: /switch to an unknown id changes nothing") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/new a\n/switch nowhere\n/switch\n/new a\n/sessions\n");
  CHECK(r.out.find("no open session 'nowhere' (see /sessions)\n") != std::string::npos);
  CHECK(r.out.find("usage: /switch ID (see /sessions)\n") != std::string::npos);
  // A second "a" is refused: the id is taken.
  CHECK(r.out.find("parley-chat: error: cannot start a session: ") != std::string::npos);
  const auto listed = listed_sessions(r.out);
  CHECK(listed.size() == 2);
  CHECK(listed.at("a").current);
}

TEST_CASE("console sessions: /system and /reset replace only the current conversation") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/new a\nOnce upon a time\n/new b\nThe cat\n/system Be brief\n"
                                  "/sessions\n/reset\n/sessions\n");
  CHECK(r.exit_code == 0);
  const size_t reset = r.out.rfind("(new conversation)\n");
  REQUIRE(reset != std::string::npos);
  const auto after_system = listed_sessions(r.out.substr(0, reset));
  CHECK(after_system.count("b") == 0);  // closed
  CHECK(after_system.at("a").turns == 2);
  CHECK(after_system.size() == 3);

  // The replacement keeps the system prompt: one turn, the prompt itself.
  const auto after_reset = listed_sessions(r.out.substr(reset));
  CHECK(after_reset.size() == 3);
  CHECK(after_reset.at("a").turns == 2);
  for (const auto& [id, s] : after_reset) {
    if (s.current) CHECK(s.turns == 1);
  }
}

TEST_CASE("console sessions: /stats after a second turn shows reused KV and block counts") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/new a\nOnce upon a time\n/stats\nThe cat\n/stats\n");
  CHECK(r.exit_code == 0);
  const size_t second = r.out.rfind("last turn: ");
  REQUIRE(second != std::string::npos);
  const TurnFigures first_turn = turn_figures(r.out.substr(r.out.find("last turn: ")));
  const TurnFigures second_turn = turn_figures(r.out.substr(second));
  CHECK(first_turn.reused == 0);
  CHECK(first_turn.computed == first_turn.prompt);
  // The first exchange's KV stays: only the new message (and the last reply token) is computed.
  CHECK(second_turn.reused > 0);
  CHECK(second_turn.reused + second_turn.computed ==
        first_turn.prompt + first_turn.generated + second_turn.prompt);
  CHECK(second_turn.generated == 8);

  unsigned long long per_token = 0, used = 0, shared = 0, cached = 0, total = 0;
  REQUIRE(std::sscanf(r.out.c_str() + r.out.rfind("KV: "), "KV: %llu bytes/token",
                      &per_token) == 1);
  CHECK(per_token > 0);
  REQUIRE(std::sscanf(r.out.c_str() + r.out.rfind("KV blocks: "),
                      "KV blocks: %llu used, %llu shared, %llu cached of %llu total", &used,
                      &shared, &cached, &total) == 4);
  CHECK(used == 2);  // a's 24 tokens (5 + 8 + 3 + 8) fill one 16-token block and part of another
  CHECK(used <= total);
  CHECK(r.out.find("prefix cache: ") != std::string::npos);
}

#ifdef PARLEY_MINIMAL_EXE
TEST_CASE("the minimal C program runs a model") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_program(PARLEY_MINIMAL_EXE, quote(gguf.string()) + " 'Once upon a time'");
  CHECK(r.exit_code == 0);
  CHECK(r.out.size() > 10);
  CHECK(run_program(PARLEY_MINIMAL_EXE, "/nonexistent.gguf").exit_code == 1);
}
#endif

#endif  // PARLEY_CHAT_EXE
