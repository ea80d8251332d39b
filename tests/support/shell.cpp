#include "support/shell.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <stdexcept>

namespace parley::test {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

ShellRun run_shell(const std::string& command) {
  ShellRun r;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed for: " + command);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace parley::test
