// What several parley-chat test files need: reading /sessions' listing, and running the
// console on a terminal (script(1)) with keys typed as a person would.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/shell.h"

namespace parley::test {

// The ids under the last "stored, not open:" of /sessions in `text`; nullopt when absent.
std::optional<std::vector<std::string>> stored_not_open(const std::string& text);

// Whether script(1) is there to give a program a terminal.
bool have_script();

// A shell snippet that waits (at most ~30 s) until the file `out` (quoted) shows the console's
// prompt "] > " at least `n` times.
std::string until_prompts(const std::string& out, int n);

// `command` on a terminal, the keys coming from `typist` (a shell snippet, which may wait with
// until_prompts(out, n)); the terminal's output goes to the file `out` (quoted) and is returned.
ShellRun run_on_terminal(const std::string& command, const std::string& typist,
                         const std::string& out);

}  // namespace parley::test
