// What several parley-chat test files need: reading /sessions' listing, and running the
// console on a terminal (script(1)) with keys typed as a person would.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "support/shell.h"

namespace parley::test {

#ifdef PARLEY_CHAT_EXE
// parley-chat on `model`, greedy, the raw template, replies of 8 tokens; `flags` come last.
std::string raw_chat_command(const std::filesystem::path& model, const std::string& flags = "");

// That console with `input` on its stdin; stdout and stderr together.
ShellRun run_raw_console(const std::filesystem::path& model, const std::string& input,
                         const std::string& flags = "");
#endif

// The id at `pos` of a /sessions line, as it is shown there (quoted when it holds blanks):
// a quoted one up to its closing quote, else up to the two blanks before the figures.
std::string listed_id(const std::string& line, size_t pos);

// The ids under the last "stored, not open:" of /sessions in `text`, as shown; nullopt when
// absent.
std::optional<std::vector<std::string>> stored_not_open(const std::string& text);

// Whether script(1) is there to give a program a terminal.
bool have_script();

// In a doctest test case: ends it, saying why, where script(1) is missing.
#define PARLEY_SCRIPT_OR_SKIP()                                           \
  if (!::parley::test::have_script()) {                                   \
    MESSAGE("skipped: no script(1) to give parley-chat a terminal");      \
    return;                                                               \
  }

// A shell snippet that waits (at most ~30 s) until the file `out` (quoted) shows the console's
// prompt "] > " at least `n` times.
std::string until_prompts(const std::string& out, int n);

// `command` on a terminal, the keys coming from `typist` (a shell snippet, which may wait with
// until_prompts(out, n)); the terminal's output goes to the file `out` (quoted) and is returned.
ShellRun run_on_terminal(const std::string& command, const std::string& typist,
                         const std::string& out);

}  // namespace parley::test
