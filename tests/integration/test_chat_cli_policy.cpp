// parley-chat and a conversation's own settings: a stored conversation keeps its overflow
// policy unless --overflow is given, /reset starts afresh with the template and policy of the
// conversation it replaces, and the banner names the template the conversation uses.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "chat_cli_support.h"
#include "support/shared_assets.h"
#include "support/shell.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

std::string chat_command(const fs::path& model, const std::string& flags) {
  return std::string(PARLEY_CHAT_EXE) + " -m " + quote(model.string()) + " --temp 0 " + flags;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("console: --overflow applies to a stored conversation it opens; else its own stays") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string flags = "--store " + quote((dir / "s.db").string()) +
                            " --session o --template raw -n 8 --ctx 40 ";
  // Four short exchanges fill most of the 40 tokens; the conversation refuses more.
  for (const char* message : {"Once upon a time", "The cat", "The dog", "The end"}) {
    run_shell(chat_command(gguf, flags + "-p " + quote(message)) + " >/dev/null 2>&1");
  }
  const ShellRun refused = run_shell(chat_command(gguf, flags + "-p Again") + " 2>&1");
  REQUIRE(refused.exit_code == 1);
  CHECK(refused.out.find("PARLEY_E_CONTEXT_FULL") != std::string::npos);

  const ShellRun dropping =
      run_shell(chat_command(gguf, flags + "--overflow drop-oldest -p Again") + " 2>&1");
  CHECK(dropping.exit_code == 0);
  // The policy is the conversation's now, kept by the store: the next run drops too.
  CHECK(run_shell(chat_command(gguf, flags + "-p More") + " 2>&1").exit_code == 0);
  const fs::path exported = dir / "o.json";
  run_shell("printf '%s\\n' " + quote("/export " + exported.string()) + " | " +
            chat_command(gguf, flags) + " >/dev/null 2>&1");
  CHECK(read_json(exported)["overflow"] == "drop_oldest");
  // And back, by the flag again (whether the message then fits or not).
  run_shell(chat_command(gguf, flags + "--overflow error -p Again") + " >/dev/null 2>&1");
  run_shell("printf '%s\\n' " + quote("/export " + exported.string()) + " | " +
            chat_command(gguf, flags) + " >/dev/null 2>&1");
  CHECK(read_json(exported)["overflow"] == "error");
}

TEST_CASE("console: /reset keeps the conversation's template and overflow policy") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string store = "--store " + quote((dir / "s.db").string()) + " --session k ";
  REQUIRE(run_shell(chat_command(gguf, store + "--template chatml --overflow drop-oldest -n 3 "
                                           "-p hi") +
                    " >/dev/null 2>&1")
              .exit_code == 0);
  // This run names neither: /reset takes them from the conversation it replaces.
  const fs::path exported = dir / "r.json";
  const ShellRun r = run_shell("printf '%s\\n' /reset " + quote("/export " + exported.string()) +
                               " | " + chat_command(gguf, store + "-n 3") + " 2>&1");
  CHECK(r.out.find("(new conversation)") != std::string::npos);
  const auto json = read_json(exported);
  CHECK(json["chat_template"] == "chatml");
  CHECK(json["overflow"] == "drop_oldest");
  CHECK(json["messages"].empty());
}

TEST_CASE("console: the banner names the template of the conversation") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  PARLEY_SCRIPT_OR_SKIP();
  TempDir dir;
  const std::string out = quote((dir / "out.txt").string());
  const std::string typist = until_prompts(out, 1) + "printf '/quit\\n'; sleep 0.5";
  const ShellRun r = run_on_terminal(chat_command(gguf, "--template chatml"), typist, out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("| template chatml |") != std::string::npos);
}

#endif  // PARLEY_CHAT_EXE
