// Commands through the POSIX shell, for the tests that run the programs as people do.
#pragma once

#include <string>

namespace parley::test {

// A string as one word of a shell command line.
std::string shell_quote(const std::string& s);

struct ShellRun {
  int exit_code = -1;  // -1 when the shell did not exit normally
  std::string out;     // what the command wrote to stdout
};

// Runs `command` with /bin/sh (popen) and collects its stdout.
ShellRun run_shell(const std::string& command);

}  // namespace parley::test
