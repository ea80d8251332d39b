// parley-chat writing where it may fail: /export never costs a file it did not write (nor one
// an earlier export wrote), and a reply that cannot reach stdout fails the run.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shared_assets.h"
#include "support/shell.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

// The console on the real model, greedy and short, `input` on its stdin; stdout and stderr
// together. `limits` (shell commands) run first, for parley-chat alone.
ShellRun run_console(const fs::path& model, const std::string& input,
                     const std::string& limits = "") {
  return run_shell("printf '%s' " + quote(input) + " | ( " + limits + " exec " +
                   PARLEY_CHAT_EXE + " -m " + quote(model.string()) +
                   " --template raw --temp 0 -n 8 ) 2>&1");
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The names in a directory, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("console: /export refuses a directory, a device and a missing directory, and "
          "removes or creates nothing") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const fs::path sub = dir / "sub", missing = dir / "none" / "x.json";
  fs::create_directory(sub);
  // A link to a device: a failed write used to remove the path it had opened, this link (or,
  // named directly, /dev/full itself).
  const bool has_full = fs::exists("/dev/full");
  const fs::path device = dir / "full-link";
  if (has_full) fs::create_symlink("/dev/full", device);
  if (!has_full) MESSAGE("no /dev/full: the device case is skipped");
  const ShellRun r = run_console(gguf, "Once upon a time\n/export " + sub.string() + "\n" +
                                           (has_full ? "/export " + device.string() + "\n" : "") +
                                           "/export " + missing.string() + "\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("parley-chat: error: cannot write " + sub.string() + ": it is a directory\n") !=
        std::string::npos);
  CHECK(r.out.find("parley-chat: error: cannot write " + missing.string() +
                   ": No such file or directory\n") != std::string::npos);
  CHECK(r.out.find("(exported") == std::string::npos);
  CHECK(fs::is_empty(sub));
  CHECK_FALSE(fs::exists(missing.parent_path()));
  if (has_full) {
    CHECK(r.out.find("parley-chat: error: cannot write " + device.string() +
                     ": it is not a regular file\n") != std::string::npos);
    CHECK(fs::is_symlink(device));
    CHECK(fs::is_character_file("/dev/full"));
    CHECK(names_in(dir.path()) == std::vector<std::string>{"full-link", "sub"});
  } else {
    CHECK(names_in(dir.path()) == std::vector<std::string>{"sub"});
  }
}

// A file whose name is as long as a name may be: its export's temporary file beside it, whose
// name is longer, is what fails, and the error says so rather than blame the target.
TEST_CASE("console: /export over a file that nothing new can go beside names the file that "
          "failed") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const fs::path target = dir / std::string(255, 'c');
  { std::ofstream(target) << "{}"; }
  const ShellRun r = run_console(gguf, "Once upon a time\n/export " + target.string() + "\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("parley-chat: error: cannot write " + target.string() +
                   ": cannot create the temporary file " + target.string() + ".tmp-") !=
        std::string::npos);
  CHECK(r.out.find(": File name too long\n") != std::string::npos);
  CHECK(r.out.find("(exported") == std::string::npos);
  CHECK(file_text(target) == "{}");
}

TEST_CASE("console: /export replaces an existing file whole; a failed export leaves it as it "
          "was") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const fs::path file = dir / "chat.json";
  { std::ofstream(file) << "{\"an earlier file\": \"not a conversation\"}"; }
  const ShellRun first = run_console(gguf, "Once upon a time\n/export " + file.string() + "\n");
  CHECK(first.out.find("(exported ") != std::string::npos);
  const std::string exported = file_text(file);
  const auto json = nlohmann::json::parse(exported, nullptr, false);
  REQUIRE_FALSE(json.is_discarded());
  CHECK(json["messages"].size() == 2);

  // A file size limit (1 KiB at most) makes the next export fail part way: its JSON is
  // several times that. SIGXFSZ ignored, the write fails with EFBIG instead of ending the run.
  std::string long_reply;
  for (int i = 0; i < 60; ++i) long_reply += "and the dog ran ";
  const ShellRun failed =
      run_console(gguf, "/exchange Once upon a time | " + long_reply + "\n/export " +
                            file.string() + "\n",
                  "trap '' XFSZ; ulimit -f 1;");
  CHECK(failed.exit_code == 0);
  CHECK(failed.out.find("parley-chat: error: cannot write " + file.string() + ": ") !=
        std::string::npos);
  CHECK(failed.out.find("(exported ") == std::string::npos);
  CHECK(file_text(file) == exported);  // the earlier export, whole
  CHECK(names_in(dir.path()) == std::vector<std::string>{"chat.json"});  // no temporary left
}

TEST_CASE("console: /import reads a file whose name holds blanks, with or without an id") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string file = (dir / "my saved chat.json").string();
  // The id is the last word, when the whole argument names no file.
  const ShellRun r = run_console(
      gguf, "Once upon a time\n/export " + file + "\n/import " + file + " copy1\n");
  CHECK(r.out.find("(exported ") != std::string::npos);
  CHECK(r.out.find("(imported copy1:") != std::string::npos);
  // The whole argument names the file: the conversation keeps its id (not open in this run).
  const ShellRun again = run_console(gguf, "/import " + file + "\n");
  CHECK(again.out.find("cannot read") == std::string::npos);
  CHECK(again.out.find("(imported s-") != std::string::npos);
}

TEST_CASE("console: /export and /import count one message as one") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string file = (dir / "one.json").string();
  const ShellRun r = run_console(
      gguf, "/exchange Hi | there\n/rewind 1\n/export " + file + "\n/import " + file + " copy\n");
  CHECK(r.out.find("(exported ") != std::string::npos);
  CHECK(r.out.find(": 1 message to " + file + ")\n") != std::string::npos);
  CHECK(r.out.find("(imported copy: 1 message from " + file + ")\n") != std::string::npos);
}

TEST_CASE("a reply that cannot be written to stdout fails the run") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  if (!fs::exists("/dev/full")) {
    MESSAGE("skipped: no /dev/full to write to");
    return;
  }
  const std::string chat = std::string(PARLEY_CHAT_EXE) + " -m " + quote(gguf.string()) +
                           " --template raw --temp 0 -n 8";
  const std::string said = "parley-chat: error: cannot write the reply to standard output: ";
  // stderr to the pipe, stdout to the full device.
  const ShellRun one_shot = run_shell(chat + " -p 'Once upon a time' 2>&1 >/dev/full");
  CHECK(one_shot.exit_code == 1);
  CHECK(one_shot.out.find(said) != std::string::npos);
  CHECK(one_shot.out.find("stopped") == std::string::npos);
  const ShellRun console =
      run_shell("printf 'Once upon a time\\n/sessions\\n' | " + chat + " 2>&1 >/dev/full");
  CHECK(console.exit_code == 1);
  CHECK(console.out.find(said) != std::string::npos);
  // Written, the same runs succeed.
  CHECK(run_shell(chat + " -p 'Once upon a time' 2>&1").exit_code == 0);
}

TEST_CASE("console output other than a reply that cannot be written is named") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  if (!fs::exists("/dev/full")) {
    MESSAGE("skipped: no /dev/full to write to");
    return;
  }
  const ShellRun r = run_shell("printf '/help\\n' | " + std::string(PARLEY_CHAT_EXE) + " -m " +
                               quote(gguf.string()) + " 2>&1 >/dev/full");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("parley-chat: error: cannot write the output of /help to standard output: ") !=
        std::string::npos);
}

#endif  // PARLEY_CHAT_EXE
