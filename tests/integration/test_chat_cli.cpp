// parley-chat as scripts and people use it. One-shot mode: stdout holds the reply and the ids
// line, diagnostics go to stderr, the exit status says whether it worked. The console: messages
// and /commands piped into stdin, several conversations in one run. With --store: conversations
// that outlive a run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "support/sanitizer_build.h"
#include "chat_cli_support.h"
#include "support/shared_assets.h"
#include "support/shell.h"
#include "text/json_prefix.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;

namespace {

// stdout only, or stdout and stderr as they were written.
using Run = ShellRun;

std::string quote(const std::string& s) { return shell_quote(s); }

enum class Stderr { dropped, merged };

// Runs a program with what the shell command `feed` prints on its stdin; collects its stdout
// (and stderr when merged).
Run run_fed_program(const std::string& feed, const std::string& exe, const std::string& args,
                    Stderr err) {
  return run_shell("{ " + feed + "; } | " + exe + " " + args +
                   (err == Stderr::merged ? " 2>&1" : " 2>/dev/null"));
}

// Runs a program with `input` on its stdin.
Run run_program(const std::string& exe, const std::string& args, const std::string& input = "",
                Stderr err = Stderr::dropped) {
  return run_fed_program("printf '%s' " + quote(input), exe, args, err);
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

// The console on the real model with a session store, greedy and short, with its error lines
// in the output. `flags` come before the model's.
Run run_store_console(const std::filesystem::path& model, const std::filesystem::path& store,
                      const std::string& input, const std::string& flags = "") {
  return run_program(PARLEY_CHAT_EXE,
                     flags + " --store " + quote(store.string()) + " -m " + quote(model.string()) +
                         " --template raw --temp 0 -n 8",
                     input, Stderr::merged);
}

// One line of /sessions:
// "* a  4 turns, 24 tokens, active, 15360 KV bytes resident, 0 stored".
struct ListedSession {
  bool current = false;
  unsigned turns = 0;
  unsigned tokens = 0;
  std::string state;
  unsigned long long kv_resident = 0;
  unsigned long long kv_stored = 0;
};

// The /sessions lines found in `text`, by id (a later line for an id wins).
std::map<std::string, ListedSession> listed_sessions(const std::string& text) {
  std::map<std::string, ListedSession> found;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() < 3 || (line[0] != '*' && line[0] != ' ') || line[1] != ' ') continue;
    const std::string id = listed_id(line, 2);
    const size_t gap = 2 + id.size();
    if (line.compare(gap, 2, "  ") != 0) continue;
    ListedSession s;
    s.current = line[0] == '*';
    char state[16] = "";
    if (std::sscanf(line.c_str() + gap,
                    " %u turns, %u tokens, %15[a-z], %llu KV bytes resident, %llu stored",
                    &s.turns, &s.tokens, state, &s.kv_resident, &s.kv_stored) != 5) {
      continue;
    }
    s.state = state;
    found[id] = s;
  }
  return found;
}

bool contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
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

// "last turn: P new prompt tokens, G generated; KV of R tokens reused, C computed; ..." from
// /stats.
struct TurnFigures {
  unsigned prompt = 0, reused = 0, computed = 0, generated = 0;
};

TurnFigures turn_figures(const std::string& stats_line) {
  TurnFigures f;
  const int n = std::sscanf(
      stats_line.c_str(),
      "last turn: %u new prompt tokens, %u generated; KV of %u tokens reused, %u computed; ",
      &f.prompt, &f.generated, &f.reused, &f.computed);
  REQUIRE(n == 4);
  return f;
}

// The figures of a scoring command's line for `best`, which it lists (after `header`) before
// `worse`.
struct ScoredLine {
  double logprob = 0;
  double per_token = 0;
};
ScoredLine best_scored(const Run& r, const std::string& header, const std::string& best,
                       const std::string& worse) {
  const size_t at = r.out.find(header);
  REQUIRE(at != std::string::npos);
  const size_t best_at = r.out.find(best + "\n", at);
  const size_t worse_at = r.out.find(worse + "\n", at);
  REQUIRE(best_at != std::string::npos);
  REQUIRE(worse_at != std::string::npos);
  CHECK(best_at < worse_at);
  ScoredLine line;
  const size_t start = r.out.rfind('\n', best_at) + 1;
  REQUIRE(std::sscanf(r.out.c_str() + start, "%lf %lf", &line.logprob, &line.per_token) == 2);
  return line;
}

// A file's JSON; discarded (is_discarded()) when it is missing or not JSON.
nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(in, nullptr, false);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::string ids_line(const std::vector<int32_t>& ids) {
  std::string s = "ids:";
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

// The reference's greedy continuation of "Once upon a time" (llama2.c), which the
// /continue and /exchange tests follow token by token.
GreedyGolden once_upon_golden(const std::filesystem::path& goldens_path) {
  const auto goldens = read_greedy_goldens(goldens_path);
  const auto it = std::find_if(goldens.begin(), goldens.end(),
                               [](const GreedyGolden& x) { return x.name == "once_upon"; });
  REQUIRE(it != goldens.end());
  return *it;
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

TEST_CASE("--stop ends the reply before the text, and --print-ids shows the ids it kept") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string base = "-m " + quote(gguf.string()) +
                           " --template raw --temp 0 --ignore-eos -n 48 --print-ids -p " +
                           quote("Once upon a time");
  const Run full = run_chat(base);
  REQUIRE(full.exit_code == 0);
  const size_t full_cut = full.out.rfind("\nids:");
  REQUIRE(full_cut != std::string::npos);
  const std::string reply = full.out.substr(0, full_cut);
  // A word's start, where its token's text starts (one the stop string began inside would
  // give way to the tokens of its part before it).
  const size_t word = reply.find(' ', reply.size() / 2);
  REQUIRE(word + 5 <= reply.size());
  const std::string stop = reply.substr(word, 5);
  const Run cut = run_chat(base + " --stop " + quote(stop) + " --stop zzzz");
  CHECK(cut.exit_code == 0);
  const size_t at = cut.out.rfind("\nids:");
  REQUIRE(at != std::string::npos);
  CHECK(cut.out.substr(0, at) == reply.substr(0, reply.find(stop)));
  // The kept ids start the uncut reply's.
  const std::string ids = cut.out.substr(at + 1), full_ids = full.out.substr(full_cut + 1);
  CHECK(ids.size() < full_ids.size());
  CHECK(full_ids.rfind(ids.substr(0, ids.size() - 1), 0) == 0);
  // The console's /stats says which stop string ended the reply.
  const Run console = run_chat("-m " + quote(gguf.string()) +
                                   " --template raw --temp 0 --ignore-eos -n 48 --stop zzzz" +
                                   " --stop " + quote(stop),
                               "Once upon a time\n/stats\n/quit\n");
  CHECK(console.out.find("last reply ended at: stop string 1") != std::string::npos);
  const Run empty = run_program(PARLEY_CHAT_EXE, "-m x --stop '' -p hi", "", Stderr::merged);
  CHECK(empty.exit_code == 1);
  CHECK(empty.out == "parley-chat: error: a --stop text has 1 to 256 bytes\n");
}

TEST_CASE("--print-ids prints the whole reply's ids: a --reply-prefix's, all after /continue") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string flags =
      "-m " + quote(gguf.string()) + " --template raw --temp 0 --ignore-eos -n 4 --print-ids";
  const auto ids_in = [](const std::string& line) {
    std::istringstream words(line.substr(line.find(':') + 1));
    std::vector<std::string> ids;
    for (std::string id; words >> id;) ids.push_back(id);
    return ids;
  };
  const Run prefixed = run_chat(flags + " --reply-prefix ' and a dog' -p 'Once upon a time'");
  REQUIRE(prefixed.exit_code == 0);
  const size_t at = prefixed.out.rfind("\nids:");
  REQUIRE(at != std::string::npos);
  CHECK(ids_in(prefixed.out.substr(at + 1)).size() > 4);  // the prefix's tokens, then 4
  const Run continued = run_chat(flags, "Once upon a time\n/continue\n");
  const size_t first = continued.out.find("ids:"), second = continued.out.rfind("ids:");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != first);
  const size_t end = continued.out.find('\n', first);
  const auto before = ids_in(continued.out.substr(first, end - first));
  const auto after = ids_in(continued.out.substr(second));
  CHECK(before.size() == 4);
  CHECK(after.size() == 8);
  CHECK(std::equal(before.begin(), before.end(), after.begin()));
}

TEST_CASE("--logit-bias bans or favours token ids; a malformed one is refused") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string base = "-m " + quote(gguf.string()) +
                           " --template raw --temp 0 --ignore-eos -n 6 --print-ids -p " +
                           quote("Once upon a time");
  const auto ids_of = [](const Run& r) {
    const size_t at = r.out.rfind("\nids:");
    REQUIRE(at != std::string::npos);
    return r.out.substr(at + 1);
  };
  const Run plain = run_chat(base);
  REQUIRE(plain.exit_code == 0);
  const std::string first = ids_of(plain).substr(5, ids_of(plain).find(' ', 5) - 5);
  const Run banned = run_chat(base + " --logit-bias " + first + "=-inf");
  CHECK(banned.exit_code == 0);
  std::string banned_ids = ids_of(banned);
  banned_ids.back() = ' ';  // "ids: a b c " : every id between spaces
  CHECK(banned_ids.find(" " + first + " ") == std::string::npos);
  const Run favoured = run_chat(base + " --logit-bias 300=100 --logit-bias " + first + "=-inf");
  CHECK(favoured.exit_code == 0);
  CHECK(ids_of(favoured) == "ids: 300 300 300 300 300 300\n");
  for (const char* bad : {"7", "x=1", "7=", "7=inf", "-1=2"}) {
    CAPTURE(bad);
    const Run r = run_program(PARLEY_CHAT_EXE, std::string("-m x -p hi --logit-bias ") + bad, "",
                              Stderr::merged);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("invalid value for --logit-bias") != std::string::npos);
  }
  const Run past = run_program(PARLEY_CHAT_EXE, base + " --logit-bias 512=1", "", Stderr::merged);
  CHECK(past.exit_code == 1);
  CHECK(past.out.find("below the vocabulary's 512") != std::string::npos);
  CHECK(run_chat(base + " --logit-bias 512=1").out.empty());  // a refused send writes nothing
}

TEST_CASE("--format json: replies are one JSON object's start; other formats are refused") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string base = "-m " + quote(gguf.string()) + " --template raw --temp 0 -n 60 ";
  // The story model does not close its objects of its own accord within 60 tokens.
  const Run open = run_chat(base + "--format json -p " + quote("Once upon a time"));
  REQUIRE(open.exit_code == 0);
  REQUIRE(open.out.ends_with("\n"));
  const std::string reply = open.out.substr(0, open.out.size() - 1);
  CAPTURE(reply);
  CHECK(reply.find('{') != std::string::npos);
  CHECK(parley::text::JsonPrefix::taken_length(reply) == reply.size());
  const Run whole = run_chat(base + "--format json --reply-prefix '{\"a\": []}' -p hi");
  CHECK(whole.exit_code == 0);
  CHECK(whole.out == "{\"a\": []}\n");
  const Run console = run_chat(base + "--format json --reply-prefix '{}'", "hi\n/stats\n/quit\n");
  CHECK(console.out.find("last reply ended at: end of the JSON object") != std::string::npos);
  const Run bad_start = run_program(PARLEY_CHAT_EXE, base + "--format json --reply-prefix x -p hi",
                                    "", Stderr::merged);
  CHECK(bad_start.exit_code == 1);
  CHECK(bad_start.out.find("reply_prefix is not the start of a JSON object") != std::string::npos);
  const Run bad = run_program(PARLEY_CHAT_EXE, "-m x --format yaml -p hi", "", Stderr::merged);
  CHECK(bad.exit_code == 1);
  CHECK(bad.out ==
        "parley-chat: error: invalid value for --format: 'yaml' (expected text or json)\n");
}

TEST_CASE("--json-schema FILE: replies are objects the schema accepts; bad schemas are refused") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string schema = (dir.path() / "quest.json").string();
  write_text(schema, R"({"properties": {"done": {"type": "boolean"},
      "kind": {"enum": ["fetch", "slay"]}}, "required": ["done", "kind"]})");
  const std::string base = "-m " + quote(gguf.string()) + " --template raw --temp 0 -n 60 ";
  // From the last value on, the schema leaves the model no way but to close within 60 tokens
  // (whitespace runs end at 32 bytes).
  const Run r = run_chat(base + "--json-schema " + quote(schema) + " --reply-prefix " +
                         quote("{\"done\": true, \"kind\": ") + " -p " + quote("Once"));
  REQUIRE(r.exit_code == 0);
  CAPTURE(r.out);
  REQUIRE(r.out.ends_with("}\n"));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.size() == 2);
  CHECK(j["done"] == true);
  CHECK((j["kind"] == "fetch" || j["kind"] == "slay"));
  const auto refused = [&](const std::string& flags) {
    const Run bad = run_program(PARLEY_CHAT_EXE, "-m x " + flags + " -p hi", "", Stderr::merged);
    CHECK(bad.exit_code == 1);
    return bad.out;
  };
  write_text(schema, R"({"properties": {"name": {"type": "string", "pattern": "^A"}}})");
  CHECK(refused("--json-schema " + quote(schema)) ==
        "parley-chat: error: --json-schema: json_schema at \"/properties/name\": \"pattern\" "
        "(string patterns) is not supported\n");
  CHECK(refused("--format text --json-schema " + quote(schema)) ==
        "parley-chat: error: --json-schema asks for JSON replies, but --format is text\n");
  const std::string missing = (dir.path() / "missing.json").string();
  CHECK(refused("--json-schema " + quote(missing)) ==
        "parley-chat: error: cannot read the --json-schema file '" + missing +
            "': No such file or directory\n");
  write_text(schema, "");
  CHECK(refused("--json-schema " + quote(schema)).find("is empty") != std::string::npos);
}

TEST_CASE("errors exit with status 1 and keep stdout empty") {
  CHECK(run_chat("").exit_code == 1);
  CHECK(run_chat("--no-such-flag").exit_code == 1);
  const Run missing = run_chat("-m /nonexistent/model.gguf -p hi");
  CHECK(missing.exit_code == 1);
  CHECK(missing.out.empty());
  CHECK(run_chat("-m x --temp abc").exit_code == 1);
  CHECK(run_chat("-m x --idle-spill soon").exit_code == 1);
  const Run spill_without_store = run_program(PARLEY_CHAT_EXE, "-m x --idle-spill 100 -p hi", "",
                                              Stderr::merged);
  CHECK(spill_without_store.exit_code == 1);
  CHECK(spill_without_store.out == "parley-chat: error: --idle-spill needs --store FILE\n");
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
  CHECK(r.out.find("last turn: 5 new prompt tokens, 8 generated; KV of 0 tokens reused, "
                   "5 computed; TTFT ") != std::string::npos);
  CHECK(r.out.find("last reply ended at: max tokens") != std::string::npos);
  CHECK(r.out.find("KV: ") != std::string::npos);
  CHECK(r.out.find("unknown command /nonsense") != std::string::npos);
  CHECK(r.out.find("(new conversation)") != std::string::npos);
}

TEST_CASE("the console skips blank lines, reads CRLF lines, and sends //-lines as messages") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run plain = run_console(gguf, "Once upon a time\n");
  CHECK(run_console(gguf, "\n   \n\r\nOnce upon a time\r\n\t\n").out == plain.out);
  // "//x" is the message "/x": it gets a reply like any message, not "unknown command".
  const Run slash = run_console(gguf, "//x y\n/sessions\n");
  CHECK(slash.out.find("unknown command") == std::string::npos);
  const auto listed = listed_sessions(slash.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed.begin()->second.turns == 2);
  // "/system   " is "/system": no text, no prompt.
  CHECK(run_console(gguf, "/system\n/system   \n").out ==
        "(system prompt removed; 0 turns)\n(system prompt removed; 0 turns)\n");
}

TEST_CASE("a full context: the console says what to do; --overflow drop-oldest goes on") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string input = "Once upon a time\nThe cat\nThe dog\nThe end\nAgain\n/sessions\n";
  const std::string flags = "-m " + quote(gguf.string()) + " --template raw --temp 0 -n 8 --ctx 40";
  const Run refused = run_program(PARLEY_CHAT_EXE, flags, input, Stderr::merged);
  CHECK(refused.out.find("PARLEY_E_CONTEXT_FULL") != std::string::npos);
  CHECK(refused.out.find("--overflow drop-oldest") != std::string::npos);
  const Run dropped =
      run_program(PARLEY_CHAT_EXE, flags + " --overflow drop-oldest", input, Stderr::merged);
  CHECK(dropped.out.find("error") == std::string::npos);
  const auto listed = listed_sessions(dropped.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed.begin()->second.tokens <= 40);
  CHECK(run_chat("-m x --overflow sometimes").exit_code == 1);
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

TEST_CASE("console: /continue goes on with the reply as the reference does; /retry writes it "
          "anew") {
  PARLEY_SHARED_OR_SKIP(goldens_path, "golden/stories260k_greedy.jsonl");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const GreedyGolden g = once_upon_golden(goldens_path);
  const auto first = [&](size_t n) {
    return ids_line(
        std::vector<int32_t>(g.generated_ids.begin(), g.generated_ids.begin() + long(n)));
  };
  const Run r = run_program(PARLEY_CHAT_EXE,
                            "-m " + quote(gguf.string()) +
                                " --kv f32 --template raw --temp 0 --ignore-eos -n 16 --print-ids",
                            "/retry\n/continue\n" + g.prompt + "\n/continue\n/continue\n/retry\n"
                                "/rewind 1\n/continue\n",
                            Stderr::merged);
  CHECK(r.exit_code == 0);
  CHECK(r.out.starts_with("no reply to retry: send a message first\n"));
  CHECK(r.out.find("continue failed: parley_session_continue: the conversation has no message") !=
        std::string::npos);
  // --print-ids shows the whole reply after each call: 16, 32, 48 tokens, then 16 again twice.
  const std::string ids = first(16) + "\n", longer = first(32) + "\n", longest = first(48) + "\n";
  const size_t at16 = r.out.find(ids);
  REQUIRE(at16 != std::string::npos);
  const size_t at32 = r.out.find(longer, at16);
  REQUIRE(at32 != std::string::npos);
  const size_t at48 = r.out.find(longest, at32);
  REQUIRE(at48 != std::string::npos);
  const size_t retried = r.out.find(ids, at48);
  REQUIRE(retried != std::string::npos);
  CHECK(r.out.find("(rewound 1; 1 turns left)\n", retried) != std::string::npos);
  CHECK(r.out.find(ids, retried + ids.size()) != std::string::npos);
}

// The reference's reply cut at 8 tokens (", there was a little girl"), steered with its own
// next words: the ids are the reference's, and the model goes on as it did.
TEST_CASE("console: /continue TEXT steers the reply with its next words") {
  PARLEY_SHARED_OR_SKIP(goldens_path, "golden/stories260k_greedy.jsonl");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const GreedyGolden g = once_upon_golden(goldens_path);
  REQUIRE(g.full_text.starts_with("Once upon a time, there was a little girl named Lily."));
  const Run r = run_program(PARLEY_CHAT_EXE,
                            "-m " + quote(gguf.string()) +
                                " --kv f32 --template raw --temp 0 --ignore-eos -n 8 --print-ids",
                            g.prompt + "\n/continue named Lily.\n", Stderr::merged);
  CHECK(r.exit_code == 0);
  // 8 tokens, the 3 of " named Lily.", 8 more.
  const std::vector<int32_t> steered(g.generated_ids.begin(), g.generated_ids.begin() + 19);
  const size_t at = r.out.find(" named Lily.");
  REQUIRE(at != std::string::npos);
  CHECK(r.out.find(ids_line(steered) + "\n", at) != std::string::npos);
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

TEST_CASE("console sessions: /reset replaces only the current conversation, keeping its system "
          "prompt") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/new a\nOnce upon a time\n/new b\nThe cat\n/system Be brief\n"
                                  "/sessions\n/reset\n/sessions\n");
  CHECK(r.exit_code == 0);
  const size_t reset = r.out.rfind("(new conversation)\n");
  REQUIRE(reset != std::string::npos);
  const auto after_system = listed_sessions(r.out.substr(0, reset));
  CHECK(after_system.at("b").turns == 3);  // the prompt before its exchange
  CHECK(after_system.at("a").turns == 2);
  CHECK(after_system.size() == 3);

  // b is closed; the replacement keeps the prompt /system gave b: one turn, the prompt itself.
  const auto after_reset = listed_sessions(r.out.substr(reset));
  CHECK(after_reset.count("b") == 0);
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

TEST_CASE("console: /stats tells a turn's new prompt tokens from the conversation's KV reused") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  // "The cat" is 3 tokens; the first exchange's 5 + 8 tokens were there before it.
  const Run r = run_console(gguf, "Once upon a time\nThe cat\n/stats\n/sessions\n/continue\n"
                                  "/stats\n/sessions\n");
  CHECK(r.exit_code == 0);
  // The last reply token (13th) gets its KV with the next message: 12 reused, 3 + 1 computed.
  const size_t second = r.out.find("last turn: 3 new prompt tokens, 8 generated; KV of 12 tokens "
                                   "reused, 4 computed; TTFT ");
  REQUIRE(second != std::string::npos);
  // More of the reply: no prompt, and the whole conversation's KV but its last token there.
  const size_t more = r.out.find("last turn: 0 new prompt tokens, 8 generated; KV of 23 tokens "
                                 "reused, 1 computed; TTFT ",
                                 second);
  REQUIRE(more != std::string::npos);
  CHECK(r.out.find("prompt tokens (") == std::string::npos);  // the old wording, read as parts
  // The KV figures and the reply make up the conversation's tokens as /sessions counts them.
  const TurnFigures message = turn_figures(r.out.substr(second));
  const TurnFigures continued = turn_figures(r.out.substr(more));
  const auto after_message = listed_sessions(r.out.substr(second, more - second));
  const auto after_more = listed_sessions(r.out.substr(more));
  REQUIRE(after_message.size() == 1);
  REQUIRE(after_more.size() == 1);
  CHECK(after_message.begin()->second.tokens == 24);
  CHECK(message.reused + message.computed + message.generated == 24);
  CHECK(after_more.begin()->second.tokens == 32);
  CHECK(continued.reused + continued.computed + continued.generated == 32);
}

TEST_CASE("store: two one-shot runs with --session continue one conversation") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string flags = "-m " + quote(gguf.string()) + " --store " +
                            quote((dir / "chat.db").string()) +
                            " --template raw --temp 0 -n 8 ";
  const Run first = run_chat(flags + "--session s -p 'Once upon a time'");
  const Run second = run_chat(flags + "--session s -p 'The cat'");
  CHECK(first.exit_code == 0);
  CHECK(second.exit_code == 0);

  // Both messages in one console run, without a store: the same two replies, so the second
  // run answered with the first exchange before it.
  const Run together = run_console(gguf, "Once upon a time\nThe cat\n");
  REQUIRE(together.out.rfind(first.out, 0) == 0);
  CHECK(together.out.substr(first.out.size()) == second.out);
  CHECK(second.out == " named Tom. Tom loved\n");
  // A fresh conversation starting with the second message answers otherwise.
  CHECK(run_console(gguf, "The cat\n").out != second.out);

  // Without --session the library names the conversation; stderr says how to continue it.
  const Run unnamed = run_program(PARLEY_CHAT_EXE, flags + "-p 'The dog'", "", Stderr::merged);
  CHECK(unnamed.exit_code == 0);
  const std::string unnamed_id =
      text_between(unnamed.out, "parley-chat: stored as session ", " (continue with --session ");
  REQUIRE(!unnamed_id.empty());

  const Run listing = run_store_console(gguf, dir / "chat.db", "/sessions\n");
  const auto stored = stored_not_open(listing.out);
  REQUIRE(stored);
  CHECK(*stored == std::vector<std::string>{"s", unnamed_id});  // oldest first
}

TEST_CASE("store: a one-shot run that fails before its first turn leaves nothing stored") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const Run failed = run_program(PARLEY_CHAT_EXE,
                                 "-m " + quote(gguf.string()) + " --store " +
                                     quote((dir / "chat.db").string()) +
                                     " -p \"$(printf 'bad \\377')\"",
                                 "", Stderr::merged);
  CHECK(failed.exit_code == 1);
  CHECK(failed.out.find("PARLEY_E_INVALID_ARGUMENT") != std::string::npos);
  CHECK(failed.out.find("was not kept") != std::string::npos);
  const Run listing = run_store_console(gguf, dir / "chat.db", "/sessions\n");
  const auto stored = stored_not_open(listing.out);
  REQUIRE(stored);
  CHECK(stored->empty());  // "stored, not open: none"
}

TEST_CASE("store: /suspend moves the KV to the store and the next message restores it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const Run r = run_store_console(gguf, dir / "chat.db",
                                  "/suspend\nOnce upon a time\n/stats\n/suspend\n/sessions\n"
                                  "The cat\n/stats\nThe dog\n/stats\n",
                                  "--session a");
  CHECK(r.exit_code == 0);
  // Before the first message there is nothing to move.
  const size_t nothing = r.out.find("(nothing to suspend: the conversation has no KV in memory)\n");
  const size_t suspended = r.out.find("(suspended; KV in the store)\n");
  REQUIRE(suspended != std::string::npos);
  CHECK(nothing < suspended);
  CHECK(r.out.find("last turn KV: new, restore 0.00 ms\n") < suspended);

  const auto listed = listed_sessions(r.out);
  REQUIRE(listed.count("a") == 1);
  CHECK(listed.at("a").state == "spilled");
  CHECK(listed.at("a").kv_resident == 0);
  CHECK(listed.at("a").kv_stored > 0);
  CHECK(listed.at("a").turns == 2);

  const size_t restored = r.out.find("last turn KV: restored, restore ", suspended);
  REQUIRE(restored != std::string::npos);
  // Back in memory, the next turn finds it there.
  CHECK(r.out.find("last turn KV: resident, restore 0.00 ms\n", restored) != std::string::npos);
  unsigned long long store_bytes = 0;
  REQUIRE(std::sscanf(r.out.c_str() + r.out.rfind("sessions: "),
                      "sessions: 1 active, 0 idle, 0 spilled; store: %llu bytes",
                      &store_bytes) == 1);
  CHECK(store_bytes > 0);
}

TEST_CASE("store: /open after a restart brings the conversation and its KV back") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const Run before = run_store_console(gguf, dir / "chat.db", "/new s\nOnce upon a time\n/quit\n");
  CHECK(before.exit_code == 0);

  // Listed with what the store has of it before it is opened.
  const Run listing = run_store_console(gguf, dir / "chat.db", "/sessions\n", "--session other");
  const size_t line = listing.out.find("  - s  2 turns, updated 20");
  REQUIRE(line != std::string::npos);
  CHECK(listing.out.find(" UTC, ", line) != std::string::npos);
  CHECK(listing.out.find(" KV bytes stored\n", line) != std::string::npos);

  const Run after = run_store_console(gguf, dir / "chat.db", "/open s\n/sessions\nThe cat\n/stats\n");
  CHECK(after.exit_code == 0);
  CHECK(after.out.find("(session s: 2 turns from the store)\n") != std::string::npos);
  const auto listed = listed_sessions(after.out);
  REQUIRE(listed.count("s") == 1);
  CHECK(listed.at("s").current);
  CHECK(listed.at("s").state == "spilled");  // closing it at the end of the first run spilled it
  CHECK(after.out.find("\n named Tom. Tom loved\n") != std::string::npos);
  CHECK(after.out.find("last turn KV: restored, restore ") != std::string::npos);
}

TEST_CASE("store: /prepare brings a reopened conversation's KV back before its next message") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  CHECK(run_store_console(gguf, dir / "chat.db", "/new s\nOnce upon a time\n/quit\n").exit_code ==
        0);
  const Run r =
      run_store_console(gguf, dir / "chat.db", "/open s\n/prepare\n/sessions\nThe cat\n/stats\n");
  CHECK(r.exit_code == 0);
  unsigned computed = 1, there = 0;
  const size_t prepared = r.out.find("(prepared: ");
  REQUIRE(prepared != std::string::npos);
  REQUIRE(std::sscanf(r.out.c_str() + prepared,
                      "(prepared: KV of %u tokens reused, %u computed; KV restored, restore ",
                      &there, &computed) == 2);
  CHECK(computed == 0);
  const auto listed = listed_sessions(r.out);
  REQUIRE(listed.count("s") == 1);
  CHECK(listed.at("s").state == "active");  // back in memory before the message
  CHECK(there == listed.at("s").tokens - 1);
  // The reply of the run without /prepare, from KV that was already there.
  CHECK(r.out.find("\n named Tom. Tom loved\n") != std::string::npos);
  CHECK(r.out.find("last turn KV: resident, restore 0.00 ms\n") != std::string::npos);
}

TEST_CASE("console: /prepare computes a new conversation's system prompt for its first message") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string system =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her big red ball.";
  const Run r = run_program(PARLEY_CHAT_EXE,
                            "-m " + quote(gguf.string()) + " --template raw --temp 0 -n 8 " +
                                "--system " + quote(system),
                            "/prepare\n/prepare\nOne day\n/stats\n", Stderr::merged);
  CHECK(r.exit_code == 0);
  unsigned computed = 0, there = 1, again = 1, then_there = 0;
  const size_t first = r.out.find("(prepared: ");
  REQUIRE(first != std::string::npos);
  REQUIRE(std::sscanf(r.out.c_str() + first,
                      "(prepared: KV of %u tokens reused, %u computed; KV new, restore 0.00 ms)",
                      &there, &computed) == 2);
  CHECK(computed >= 16);
  CHECK(computed % 16 == 0);
  CHECK(there == 0);
  const size_t second = r.out.find("(prepared: ", first + 1);
  REQUIRE(second != std::string::npos);
  REQUIRE(std::sscanf(r.out.c_str() + second, "(prepared: KV of %u tokens reused, %u computed",
                      &then_there, &again) == 2);
  CHECK(again == 0);
  CHECK(then_there == computed);
  const size_t turn = r.out.find("last turn: ");
  REQUIRE(turn != std::string::npos);
  CHECK(turn_figures(r.out.substr(turn)).reused == computed);
}

TEST_CASE("console: /score lists replies best first and adds nothing; a bad line gets usage") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  // The words stories260K continues "Once upon a time," with, and the same words shuffled.
  const Run r = run_console(gguf,
                            "/score Once upon a time, | girl little Lily a there named was. | "
                            "there was a little girl named Lily.\n/score no replies\n/sessions\n");
  CHECK(r.exit_code == 0);
  const auto [best_lp, per_token] =
      best_scored(r, "(log-probability of each reply", "there was a little girl named Lily.",
                  "girl little Lily a there named was.");
  CHECK(best_lp < 0);
  CHECK(per_token > best_lp);  // several tokens
  CHECK(r.out.find("usage: /score MESSAGE | REPLY | REPLY ...\n") != std::string::npos);
  const auto listed = listed_sessions(r.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed.begin()->second.tokens == 0);
}

// The reference's reply cut at 8 tokens (", there was a little girl"); its next words are the
// likeliest way on, scored as the reference's logits say.
TEST_CASE("console: /score-next lists ways for the reply to go on, best first") {
  PARLEY_SHARED_OR_SKIP(golden_dir, "golden");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const auto golden = read_logits_golden(golden_dir, "once_upon");
  const Run r = run_program(PARLEY_CHAT_EXE,
                            "-m " + quote(gguf.string()) +
                                " --kv f32 --template raw --temp 0 --ignore-eos -n 8",
                            "Once upon a time\n/score-next blue | named Lily.\n/score-next\n",
                            Stderr::merged);
  CHECK(r.exit_code == 0);
  const double logprob =
      best_scored(r, "(log-probability of each way to go on", "named Lily.", "blue").logprob;
  // " named Lily." is the reference's tokens 13-15, scored by its rows 12-14.
  double expected = 0;
  for (size_t p = 13; p < 16; ++p) {
    expected += log_p(golden.logits, golden.n_vocab, p - 1, golden.token_ids[p]);
  }
  CHECK(std::fabs(logprob - expected) < 2e-3);
  CHECK(r.out.find("usage: /score-next TEXT | TEXT ...\n") != std::string::npos);
}

TEST_CASE("console: /exchange adds a written message and reply; a bad line gets usage") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const Run r = run_store_console(
      gguf, dir / "chat.db",
      "/exchange Tell me a story. | Once upon a time there was a cat.\n/exchange one part\n"
      "/sessions\n",
      "--session s");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("(added: a message and its reply)\n") != std::string::npos);
  CHECK(r.out.find("usage: /exchange USER MESSAGE | REPLY\n") != std::string::npos);
  const auto listed = listed_sessions(r.out);
  REQUIRE(listed.count("s") == 1);
  CHECK(listed.at("s").turns == 2);
  CHECK(listed.at("s").tokens > 10);
  // Stored as written: a later run lists both turns.
  const Run later = run_store_console(gguf, dir / "chat.db", "/sessions\n", "--session s");
  REQUIRE(listed_sessions(later.out).count("s") == 1);
  CHECK(listed_sessions(later.out).at("s").turns == 2);
}

// Typed after "|", a raw reply's words follow the message's after a space, as the model's own
// would: the exchange takes the reference's tokens for the whole sentence.
TEST_CASE("console: a raw /exchange reply follows the message as its next words") {
  PARLEY_SHARED_OR_SKIP(goldens_path, "golden/stories260k_greedy.jsonl");
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const GreedyGolden g = once_upon_golden(goldens_path);
  // The reference goes on with ", there was a little girl named Lily.": 11 tokens.
  REQUIRE(g.full_text.starts_with("Once upon a time, there was a little girl named Lily."));
  const Run r = run_console(
      gguf, "/exchange Once upon a time, | there was a little girl named Lily.\n/sessions\n");
  const auto listed = listed_sessions(r.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed.begin()->second.tokens == g.prompt_ids.size() + 11);
}

// A chat reply is a message of its own, kept as typed; a raw one goes on from the message, so
// its words follow after a space (as /help says), which the conversation keeps.
TEST_CASE("console: a chat /exchange reply is kept as typed, a raw one as the message's next "
          "words") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string chat_file = (dir / "chat.json").string();
  const std::string raw_file = (dir / "raw.json").string();
  const std::string exchange = "/exchange hello | world\n/export ";
  const Run chat = run_program(PARLEY_CHAT_EXE,
                               "-m " + quote(gguf.string()) + " --template chatml --temp 0 -n 8",
                               exchange + chat_file + "\n", Stderr::merged);
  const Run raw = run_console(gguf, exchange + raw_file + "\n");
  CHECK(chat.exit_code == 0);
  CHECK(raw.exit_code == 0);
  const nlohmann::json chat_json = read_json(chat_file);
  const nlohmann::json raw_json = read_json(raw_file);
  REQUIRE_FALSE(chat_json.is_discarded());
  REQUIRE_FALSE(raw_json.is_discarded());
  REQUIRE(chat_json["messages"].size() == 2);
  REQUIRE(raw_json["messages"].size() == 2);
  CHECK(chat_json["messages"][1].value("text", "") == "world");
  CHECK(raw_json["messages"][1].value("text", "") == " world");
}

TEST_CASE("console: /system gives the conversation a new system prompt, keeping its messages; "
          "/system alone removes it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  // Long enough for stories260K's replies to follow it; the exchange is written, so that the
  // conversation is the same whenever the prompt came.
  const std::string system =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her big red ball.";
  const std::string exchange = "/exchange Tom was sad. |  He wanted to see his friend.\n";
  const std::string prompted = "-m " + quote(gguf.string()) +
                               " --template raw --temp 0 -n 8 --system " + quote(system);
  // The references: conversations that had the prompt from the start, and one without it.
  const Run from_start =
      run_program(PARLEY_CHAT_EXE, prompted, exchange + "One day\nThe cat\n", Stderr::merged);
  const std::string first_reply =
      text_between(from_start.out, "(added: a message and its reply)\n", "\n");
  const std::string second_reply = text_between(from_start.out, first_reply + "\n", "\n");
  REQUIRE(first_reply.size() > 5);
  REQUIRE(second_reply.size() > 5);
  const auto tokens_of = [](const Run& run) {
    const auto listed = listed_sessions(run.out);
    REQUIRE(listed.size() == 1);
    return listed.begin()->second.tokens;
  };
  const unsigned with_prompt =
      tokens_of(run_program(PARLEY_CHAT_EXE, prompted, exchange + "/sessions\n", Stderr::merged));
  const Run without = run_console(gguf, exchange + "/sessions\nOne day\n");
  CHECK(without.out.find("\n" + first_reply + "\n") == std::string::npos);  // the prompt matters

  TempDir dir;
  const Run r = run_store_console(gguf, dir / "chat.db",
                                  exchange + "/system " + system + "\n/sessions\n/system\n" +
                                      "/sessions\n/system " + system + "\nOne day\n",
                                  "--session s");
  CHECK(r.exit_code == 0);
  const size_t removed = r.out.find("(system prompt removed; 2 turns)\n");
  REQUIRE(removed != std::string::npos);
  const size_t set_again = r.out.rfind("(system prompt set; 3 turns)\n");
  REQUIRE(set_again != std::string::npos);
  CHECK(set_again > removed);
  CHECK(r.out.find("(system prompt set; 3 turns)\n") < removed);
  const auto set = listed_sessions(r.out.substr(0, removed));
  CHECK(set.at("s").turns == 3);
  CHECK(set.at("s").tokens == with_prompt);
  // Removed, the conversation is the exchange alone again.
  CHECK(listed_sessions(r.out.substr(removed)).at("s").tokens == tokens_of(without));
  // Set again: the next reply is the one of a conversation that had it from the start.
  CHECK(r.out.substr(set_again).find("\n" + first_reply + "\n") != std::string::npos);

  // Stored: a later run goes on under the prompt.
  const Run later = run_store_console(gguf, dir / "chat.db", "The cat\n", "--session s");
  CHECK(later.out == "(session s: 5 turns from the store)\n" + second_reply + "\n");
}

TEST_CASE("console: a /system that does not fit or is not UTF-8 is refused and changes nothing") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string system =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her big red ball.";
  const Run r = run_program(PARLEY_CHAT_EXE,
                            "-m " + quote(gguf.string()) + " --template raw --temp 0 -n 8 --ctx 40",
                            "Once upon a time\n/sessions\n/system " + system +
                                "\n/system bad \377\n/sessions\n",
                            Stderr::merged);
  CHECK(r.exit_code == 0);
  const size_t refused = r.out.find("parley-chat: error: cannot set the system prompt: ");
  REQUIRE(refused != std::string::npos);
  CHECK(r.out.find("the context holds 40", refused) != std::string::npos);  // the library's word
  const size_t context_full = r.out.find("(PARLEY_E_CONTEXT_FULL)\n", refused);
  REQUIRE(context_full != std::string::npos);
  CHECK(r.out.find("(PARLEY_E_INVALID_ARGUMENT)\n", context_full) != std::string::npos);
  CHECK(r.out.find("(system prompt") == std::string::npos);
  const auto before = listed_sessions(r.out.substr(0, refused));
  const auto after = listed_sessions(r.out.substr(refused));
  REQUIRE(before.size() == 1);
  REQUIRE(after.size() == 1);
  CHECK(after.begin()->second.turns == 2);
  CHECK(after.begin()->second.tokens == before.begin()->second.tokens);
}

TEST_CASE("console: /export writes the conversation as JSON; /import of it answers as the "
          "original does") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string file = (dir / "a.json").string(), copy_file = (dir / "b.json").string();
  const Run r = run_console(gguf, "/new a\nOnce upon a time\n/export " + file + "\n/import " +
                                      file + " b\n/export " + copy_file +
                                      "\n/sessions\n/switch b\nThe cat\n/switch a\nThe cat\n"
                                      "/sessions\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("error") == std::string::npos);
  CHECK(r.out.find("(exported a: 2 messages to " + file + ")\n") != std::string::npos);
  const std::string announced = "(imported b: 2 messages from " + file + ")\n(session b)\n";
  const size_t imported = r.out.find(announced);
  REQUIRE(imported != std::string::npos);

  const nlohmann::json original = read_json(file);
  REQUIRE_FALSE(original.is_discarded());
  CHECK(original.value("format", "") == "parley-conversation");
  CHECK(original.value("id", "") == "a");
  REQUIRE(original.contains("messages"));
  CHECK(original["messages"].size() == 2);
  // Same model: the copy holds the conversation as it was, token ids and all; only the id
  // differs.
  nlohmann::json copy = read_json(copy_file);
  REQUIRE_FALSE(copy.is_discarded());
  CHECK(copy.value("id", "") == "b");
  copy["id"] = "a";
  CHECK(copy == original);

  const auto after_import = listed_sessions(text_between(r.out, announced, "(session b)\n"));
  CHECK(after_import.at("b").current);
  CHECK(after_import.at("b").turns == after_import.at("a").turns);
  CHECK(after_import.at("b").tokens == after_import.at("a").tokens);

  // The same message on the same conversation, sampled greedily: the same reply.
  const size_t switched = r.out.find("(session b)\n", imported + announced.size());
  REQUIRE(switched != std::string::npos);
  const std::string reply_b = text_between(r.out, "(session b)\n", "\n(session a)\n", switched);
  const std::string reply_a =
      text_between(r.out, "(session a)\n", "\n", r.out.rfind("(session a)\n"));
  CHECK(reply_b.size() > 5);
  CHECK(reply_b == reply_a);
  const auto at_end = listed_sessions(r.out.substr(r.out.rfind("(session a)\n")));
  CHECK(at_end.at("a").turns == 4);
  CHECK(at_end.at("b").turns == 4);
  CHECK(at_end.at("a").tokens == at_end.at("b").tokens);
}

TEST_CASE("console: /import of a missing file, bad JSON or an id in use and /export to a path "
          "that cannot be written are refused and change nothing") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string saved = (dir / "a.json").string(), missing = (dir / "none.json").string(),
                    broken = (dir / "broken.json").string(),
                    other = (dir / "other.json").string(),
                    unwritable = (dir / "no-such-dir" / "x.json").string();
  write_text(broken, "{\"format\": \"parley-conversation\", ");
  write_text(other, "{\"format\": \"chat-log\"}");
  const Run r = run_console(gguf, "/new a\nOnce upon a time\n/export " + saved +
                                      "\n/sessions\n/import " + missing + "\n/import " + broken +
                                      "\n/import " + other + "\n/import " + saved +
                                      "\n/export " + unwritable +
                                      "\n/sessions\n/switch a\nThe cat\n/sessions\n");
  CHECK(r.exit_code == 0);
  const size_t first_error = r.out.find("parley-chat: error: ");
  REQUIRE(first_error != std::string::npos);
  // Each refusal names the file or the library's reason, in the order they were typed.
  const size_t no_file =
      r.out.find("parley-chat: error: cannot read " + missing + ": No such file or directory\n");
  REQUIRE(no_file == first_error);
  const std::string import_error = "parley-chat: error: cannot import the conversation: ";
  const size_t not_json = r.out.find(import_error, no_file);
  REQUIRE(not_json != std::string::npos);
  CHECK(r.out.find("not valid JSON", not_json) != std::string::npos);
  const size_t not_ours = r.out.find(import_error, not_json + 1);
  REQUIRE(not_ours != std::string::npos);
  CHECK(r.out.find("'format' is not \"parley-conversation\"", not_ours) != std::string::npos);
  const size_t in_use = r.out.find(import_error, not_ours + 1);
  REQUIRE(in_use != std::string::npos);
  CHECK(r.out.find("'a' is already in use by an open session", in_use) != std::string::npos);
  CHECK(r.out.find("(PARLEY_E_INVALID_ARGUMENT)\n", in_use) != std::string::npos);
  const size_t not_written = r.out.find(
      "parley-chat: error: cannot write " + unwritable + ": No such file or directory\n", in_use);
  CHECK(not_written != std::string::npos);
  CHECK(r.out.find("(imported") == std::string::npos);
  CHECK(r.out.find("(exported a: 2 messages to " + saved + ")\n") != std::string::npos);
  CHECK(r.out.find(unwritable + ")") == std::string::npos);

  // The console goes on with the same conversations, a current, and still answers.
  const size_t switched = r.out.find("(session a)\n", not_written);
  REQUIRE(switched != std::string::npos);
  const auto before = listed_sessions(r.out.substr(0, first_error));
  const auto after = listed_sessions(r.out.substr(not_written, switched - not_written));
  REQUIRE(before.size() == 2);  // the console's first conversation and a
  CHECK(before.at("a").current);
  REQUIRE(after.size() == 2);
  CHECK(after.at("a").current);
  CHECK(after.at("a").turns == before.at("a").turns);
  CHECK(after.at("a").tokens == before.at("a").tokens);
  const auto at_end = listed_sessions(r.out.substr(switched));
  REQUIRE(at_end.size() == 2);
  CHECK(at_end.at("a").turns == 4);
}

TEST_CASE("console: /export and /import without a file print their usage") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_console(gguf, "/export\n/import\n/export   \n/import  \n");
  CHECK(r.exit_code == 0);
  CHECK(r.out == "usage: /export FILE\nusage: /import FILE [ID]\nusage: /export FILE\n"
                 "usage: /import FILE [ID]\n");
}

TEST_CASE("store: /delete removes a stored conversation that is not open, never an open one") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  CHECK(run_store_console(gguf, dir / "chat.db", "/new s\nOnce upon a time\n/new t\nThe cat\n")
            .exit_code == 0);

  const Run r = run_store_console(gguf, dir / "chat.db",
                                  "/delete s\n/sessions\n/delete t\n/delete t\n/sessions\n"
                                  "/close s\n/new x\n/close s\n/delete s\n/sessions\n",
                                  "--session s");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("(session s: 2 turns from the store)\n") == 0);
  const size_t refused =
      r.out.find("cannot delete 's': it is open in this console (/close it first)\n");
  REQUIRE(refused != std::string::npos);
  const size_t deleted_t = r.out.find("(deleted t)\n");
  REQUIRE(deleted_t != std::string::npos);
  const auto before_delete = stored_not_open(r.out.substr(0, deleted_t));
  REQUIRE(before_delete);
  CHECK(contains(*before_delete, "t"));
  CHECK_FALSE(contains(*before_delete, "s"));  // open here, so not in this section

  // Deleting it again: the library's error, with its status.
  const size_t again = r.out.find("parley-chat: error: cannot delete the session: ", deleted_t);
  REQUIRE(again != std::string::npos);
  CHECK(r.out.find("no stored session 't' (PARLEY_E_NOT_FOUND)\n", again) != std::string::npos);

  // The only open conversation stays; once another is open, s can be closed and deleted.
  CHECK(r.out.find("'s' is the only open session; /new or /open another first, or /quit\n") !=
        std::string::npos);
  CHECK(r.out.find("(closed s)\n(session x)\n(deleted s)\n") != std::string::npos);
  const auto at_end = listed_sessions(r.out.substr(r.out.rfind("(deleted s)")));
  CHECK(at_end.size() == 1);
  CHECK(at_end.count("x") == 1);
  const auto stored_at_end = stored_not_open(r.out);
  REQUIRE(stored_at_end);
  CHECK_FALSE(contains(*stored_at_end, "s"));
  CHECK_FALSE(contains(*stored_at_end, "t"));
}

TEST_CASE("--session without --store names the conversation, and store commands say why not") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const Run r = run_program(PARLEY_CHAT_EXE,
                            "-m " + quote(gguf.string()) + " --session mine --template raw",
                            "/sessions\n/suspend\n/open other\n/delete other\n", Stderr::merged);
  CHECK(r.exit_code == 0);
  const auto listed = listed_sessions(r.out);
  CHECK(listed.size() == 1);
  REQUIRE(listed.count("mine") == 1);
  CHECK(listed.at("mine").current);
  CHECK(r.out.find("stored, not open:") == std::string::npos);
  // The flag that gives a store, not the library's option.
  const std::string why = ": there is no session store (start parley-chat with --store FILE)\n";
  CHECK(r.out.find("parley-chat: error: cannot suspend" + why) != std::string::npos);
  CHECK(r.out.find("parley-chat: error: cannot open the session" + why) != std::string::npos);
  CHECK(r.out.find("parley-chat: error: cannot delete the session" + why) != std::string::npos);
  CHECK(r.out.find("store_path") == std::string::npos);
}

TEST_CASE("store: --idle-spill moves an idle conversation's KV to the store") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  // The pause, counted from the start, covers model loading and the first turn with room to
  // spare (they take longer when sanitized, or when other tests load both cores) plus many
  // times the idle limit, so the conversation is idle by the second /sessions.
  const std::string pause = kSanitizerBuild ? "6" : "2";
  const Run r = run_fed_program(
      "printf 'Once upon a time\\n/sessions\\n'; sleep " + pause +
          "; printf '/sessions\\nThe cat\\n/stats\\n'",
      PARLEY_CHAT_EXE,
      "-m " + quote(gguf.string()) + " --store " + quote((dir / "chat.db").string()) +
          " --idle-spill 100 --session a --template raw --temp 0 -n 8",
      Stderr::merged);
  CHECK(r.exit_code == 0);
  const size_t second_listing = r.out.rfind("* a  ");
  REQUIRE(second_listing != std::string::npos);
  const auto busy = listed_sessions(r.out.substr(0, second_listing));
  const auto idle = listed_sessions(r.out.substr(second_listing));
  REQUIRE(busy.count("a") == 1);
  REQUIRE(idle.count("a") == 1);
  CHECK(busy.at("a").state == "active");
  CHECK(idle.at("a").state == "spilled");
  CHECK(idle.at("a").kv_resident == 0);
  const size_t restored = r.out.find("last turn KV: restored, restore ");
  REQUIRE(restored != std::string::npos);
  CHECK(restored > second_listing);
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
