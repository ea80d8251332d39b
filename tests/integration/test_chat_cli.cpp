// parley-chat's one-shot mode, as scripts use it: stdout holds the reply and the ids line,
// diagnostics go to stderr, the exit status says whether it worked.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>
#include <string>

#include "golden.h"
#include "support/shared_assets.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;

namespace {

struct Run {
  int exit_code = -1;
  std::string out;  // stdout only
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a program with `input` on its stdin; collects its stdout.
Run run_program(const std::string& exe, const std::string& args, const std::string& input = "") {
  const std::string cmd =
      "printf '%s' " + quote(input) + " | " + exe + " " + args + " 2>/dev/null";
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
