// parley-chat's console when its input cannot be read: a read error is no end of input. It is
// said, naming standard input and the error, and fails the run, the conversations being closed
// (and stored) as at the end of input.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "chat_cli_support.h"
#include "support/shared_assets.h"
#include "support/shell.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

// A terminal's master side that yields `typed` (as the terminal shows it) and then fails
// with EIO, as it does once no program holds the terminal. -1 when there is none. Inherited
// by the programs run_shell starts, as descriptor number the value.
int terminal_that_fails_after(const std::string& typed) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) return -1;
  const char* name =
      ::grantpt(master) == 0 && ::unlockpt(master) == 0 ? ::ptsname(master) : nullptr;
  const int terminal = name ? ::open(name, O_RDWR | O_NOCTTY) : -1;
  if (terminal < 0) {
    ::close(master);
    return -1;
  }
  const bool written = ::write(terminal, typed.data(), typed.size()) == ssize_t(typed.size());
  pollfd ready{master, POLLIN, 0};
  ::poll(&ready, 1, 5000);  // what was written is there to read before the terminal goes
  ::close(terminal);
  if (!written) {
    ::close(master);
    return -1;
  }
  return master;
}

}  // namespace

TEST_CASE("console: stdin that cannot be read (a directory) is an error, not the end of input") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const ShellRun r =
      run_shell(raw_chat_command(gguf) + " < " + shell_quote(dir.path().string()) + " 2>&1");
  CHECK(r.exit_code == 1);
  CHECK(r.out == "parley-chat: error: cannot read standard input: Is a directory\n");
}

TEST_CASE(
    "console: a read error after some lines fails the run and keeps the conversation so "
    "far in the store") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  const int input = terminal_that_fails_after("Once upon a time\n");
  if (input < 0) {
    MESSAGE("skipped: no pseudo-terminal");
    return;
  }
  TempDir dir;
  const std::string store_flag = "--store " + shell_quote((dir / "chat.db").string());
  const ShellRun r = run_shell(raw_chat_command(gguf, store_flag + " --session s") + " <&" +
                               std::to_string(input) + " 2>&1");
  ::close(input);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("parley-chat: error: cannot read standard input: Input/output error\n") !=
        std::string::npos);
  // The message was answered, and the conversation holds it and its reply.
  const ShellRun later = run_raw_console(gguf, "", store_flag + " --session s");
  CHECK(later.exit_code == 0);
  CHECK(later.out == "(session s: 2 turns from the store)\n");
}

#endif  // PARLEY_CHAT_EXE
