// parley-chat's start: flags every message would be refused for are refused at once, naming
// the flag, and a failure to open says what failed (the store, not the model).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "chat_cli_support.h"
#include "support/shared_assets.h"
#include "support/shell.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

// parley-chat with `args` (shell words, not quoted again) and `input` on stdin; stdout and
// stderr together.
ShellRun run_chat(const std::string& args, const std::string& input = "") {
  return run_shell("printf '%s' " + quote(input) + " | " + PARLEY_CHAT_EXE + " " + args +
                   " 2>&1");
}

}  // namespace

TEST_CASE("sampling flags the library would refuse are refused at start, naming the flag") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string model = "-m " + quote(gguf.string()) + " --template raw -n 4 ";
  // The flags, and what the refusal says. The vocabulary has 512 tokens.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"--temp -1", "invalid value for --temp: '-1' (expected a number >= 0"},
      {"--top-p 2", "invalid value for --top-p: '2' (expected a number in [0, 1]"},
      {"--min-p 5", "invalid value for --min-p: '5' (expected a number in [0, 1]"},
      {"--repeat-penalty -3", "invalid value for --repeat-penalty: '-3' (expected a number >= 0"},
      {"--logit-bias 9999=1", "--logit-bias token 9999 is not in the model"},
      {"--logit-bias 2=-inf --logit-bias 2=5", "--logit-bias gives token 2 twice"},
      {"--reply-prefix \"$(printf 'Once \\377')\"", "the --reply-prefix text is not valid UTF-8"},
      {"--stop \"$(printf '\\377')\"", "a --stop text is not valid UTF-8"},
  };
  for (const auto& [flags, says] : refused) {
    CAPTURE(flags);
    const ShellRun console = run_chat(model + flags, "Once upon a time\nThe cat\n");
    CHECK(console.exit_code == 1);
    CHECK(console.out.rfind("parley-chat: error: " + says, 0) == 0);
    CHECK(console.out.find("send failed") == std::string::npos);
    const ShellRun one_shot = run_chat(model + flags + " -p 'Once upon a time'");
    CHECK(one_shot.exit_code == 1);
    CHECK(one_shot.out.rfind("parley-chat: error: " + says, 0) == 0);
  }
  // Banning every token leaves the model nothing to say.
  std::string every_ban;
  for (int id = 0; id < 512; ++id) every_ban += " --logit-bias " + std::to_string(id) + "=-inf";
  const ShellRun banned = run_chat(model + every_ban + " -p hi");
  CHECK(banned.exit_code == 1);
  CHECK(banned.out.find("--logit-bias bans every token of the vocabulary (512)") !=
        std::string::npos);
  // The edges of each range are taken (0 means "off" for top-p and the repeat penalty).
  const ShellRun edges =
      run_chat(model + "--temp 0 --top-p 0 --min-p 1 --repeat-penalty 0 --logit-bias 511=-inf " +
               "-p 'Once upon a time'");
  CHECK(edges.exit_code == 0);
  CHECK(edges.out.size() > 5);
}

TEST_CASE("--help says that seed 0 is a random one too") {
  const ShellRun help = run_chat("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--seed S            (default and 0: a random seed)\n") !=
        std::string::npos);
}

TEST_CASE("--help says what --print-ids, --overflow, --kv and a blank -p do") {
  const ShellRun help = run_chat("--help");
  CHECK(help.exit_code == 0);
  // The ids printed are the whole reply's, not only the generated ones.
  CHECK(help.out.find("print 'ids: <token ids>': the whole\n"
                      "                          reply's, a --reply-prefix's and, after "
                      "/continue, the\n") != std::string::npos);
  // --overflow on a stored conversation changes it for good.
  CHECK(help.out.find("becomes its policy, also in the store, for later runs too") !=
        std::string::npos);
  CHECK(help.out.find("int8 (the default; also 'default'), f16, f32") != std::string::npos);
  CHECK(help.out.find("TEXT is sent as\n                          given, also blank") !=
        std::string::npos);
}

TEST_CASE("number flags take the number alone: no blanks around it, no hex") {
  for (const char* bad :
       {"-n ' 5'", "-n '5 '", "-n +5", "-n 0x10", "--temp 0x10", "--temp ' 1'", "--temp '1 '",
        "--top-p 0x0.8p0", "--seed ' 7'", "--logit-bias ' 5=1'", "--logit-bias '5= 1'"}) {
    CAPTURE(bad);
    const ShellRun r = run_chat(std::string("-m x --help ") + bad);
    CHECK(r.exit_code == 1);
    CHECK(r.out.rfind("parley-chat: error: invalid value for ", 0) == 0);
  }
  // Parsed (and then --help): decimals, exponents, negatives where a range allows them.
  for (const char* good : {"-n 5", "--temp 0.5", "--temp 1e-1", "--temp 2.", "--top-p .9",
                           "--logit-bias 5=-1.5", "--logit-bias 5=-inf"}) {
    CAPTURE(good);
    CHECK(run_chat(std::string("-m x --help ") + good).exit_code == 0);
  }
}

TEST_CASE("a number a float cannot hold is refused for that; a seed takes all of uint64") {
  struct Refusal {
    std::string flag, want;
  };
  for (const auto& [flag, want] : std::vector<Refusal>{
           {"--temp 1e39", "at most 3.4e38 in size"},
           {"--repeat-penalty 1e-50", "0, or at least 1.4e-45 in size"},
           {"--logit-bias 5=-1e39", "ID=BIAS"},
           {"--seed 18446744073709551616", "[0, 18446744073709551615]"},
           {"--seed -1", "[0, 18446744073709551615]"}}) {
    CAPTURE(flag);
    const ShellRun r = run_chat("-m x --help " + flag);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find(want) != std::string::npos);
  }
  CHECK(run_chat("-m x --help --seed 18446744073709551615").exit_code == 0);
  CHECK(run_chat("-m x --help --temp 1e-45").exit_code == 0);
}

TEST_CASE("an empty --session is refused at start, naming the flag") {
  TempDir dir;
  const std::string store = (dir / "chat.db").string();
  // Before the model or the store is opened: "-m x" is never read.
  const std::vector<std::string> runs = {"--session '' -p hi", "--session ''",
                                         "--store " + quote(store) + " --session '' -p hi",
                                         "--help --session ''"};
  for (const std::string& flags : runs) {
    CAPTURE(flags);
    const ShellRun r = run_chat("-m x " + flags);
    CHECK(r.exit_code == 1);
    CHECK(r.out ==
          "parley-chat: error: invalid value for --session: '' (expected a conversation id, "
          "at least one character)\n");
  }
  CHECK_FALSE(fs::exists(store));
  // A blank is an id like any other.
  CHECK(run_chat("-m x --help --session ' '").exit_code == 0);
}

TEST_CASE("--help and --version that cannot be written fail the run") {
  if (!fs::exists("/dev/full")) {
    MESSAGE("skipped: no /dev/full");
    return;
  }
  const ShellRun help = run_shell(std::string(PARLEY_CHAT_EXE) + " --help 2>&1 >/dev/full");
  CHECK(help.exit_code == 1);
  CHECK(help.out.rfind("parley-chat: error: cannot write the help to standard output: ", 0) == 0);
  const ShellRun version = run_shell(std::string(PARLEY_CHAT_EXE) + " --version 2>&1 >/dev/full");
  CHECK(version.exit_code == 1);
  CHECK(version.out.find("cannot write the version") != std::string::npos);
}

TEST_CASE("a store that cannot be opened is named, not the model") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string not_sqlite = (dir / "notes.txt").string();
  std::ofstream(not_sqlite) << "not an SQLite file, and long enough to have a header's bytes";
  std::vector<std::string> stores = {(dir / "no-such-dir" / "chat.db").string(), not_sqlite,
                                     dir.path().string()};
  if (fs::exists("/dev/null")) stores.push_back("/dev/null");
  for (const std::string& store : stores) {
    CAPTURE(store);
    const ShellRun r =
        run_chat("-m " + quote(gguf.string()) + " --store " + quote(store) + " -p hi");
    CHECK(r.exit_code == 1);
    CHECK(r.out.rfind("parley-chat: error: cannot open the store " + store + ": ", 0) == 0);
    CHECK(r.out.find("model") == std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir / "no-such-dir"));
  // A missing model is still the model's failure.
  const ShellRun no_model = run_chat("-m " + quote((dir / "none.gguf").string()) + " -p hi");
  CHECK(no_model.exit_code == 1);
  CHECK(no_model.out.rfind("parley-chat: error: cannot open the model: ", 0) == 0);
}

TEST_CASE("console: the model's loading is shown on a terminal, then cleared; not in a pipe") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const std::string flags = "--prompt 'Once upon'";
  const ShellRun piped = run_shell(raw_chat_command(gguf, flags) + " 2>&1");
  CHECK(piped.exit_code == 0);
  CHECK(piped.out.find("loading") == std::string::npos);

  PARLEY_SCRIPT_OR_SKIP();
  TempDir dir;
  const ShellRun r =
      run_on_terminal(raw_chat_command(gguf, flags), "sleep 0.1", quote((dir / "out").string()));
  const size_t first = r.out.find("\rloading the model:   0 %");
  const size_t cleared = r.out.find("\r" + std::string(30, ' ') + "\r");
  REQUIRE(first != std::string::npos);
  REQUIRE(cleared != std::string::npos);
  CHECK(first < cleared);
  CHECK(r.out.find("loading", cleared) == std::string::npos);  // nothing after the clearing
  // The reply follows, as the pipe got it (its first line: a terminal ends lines with \r\n).
  const std::string reply = piped.out.substr(0, piped.out.find('\n'));
  REQUIRE_FALSE(reply.empty());
  CHECK(r.out.find(reply, cleared) != std::string::npos);
}

TEST_CASE("console: on a terminal, a load that fails clears its line before the error") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SCRIPT_OR_SKIP();
  TempDir dir;
  const auto truncated = dir / "truncated.gguf";
  std::ofstream(truncated, std::ios::binary) << read_file(gguf).substr(0, 3000);
  const ShellRun r = run_on_terminal(raw_chat_command(truncated, "--prompt 'Once upon'"),
                                     "sleep 0.1", quote((dir / "out").string()));
  const std::string cleared = "\r" + std::string(30, ' ') + "\r";
  CHECK(r.out.find(cleared + "parley-chat: error: cannot open the model: ") != std::string::npos);
}

#endif  // PARLEY_CHAT_EXE
