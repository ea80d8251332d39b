// parley-chat when it is told to end, or its reader goes: a SIGTERM or SIGHUP stops the reply
// being written as Ctrl-C does (it is kept) and ends the run as the end of input does, with
// status 128 + the signal's number; a stdout whose reader went away (`| head`) fails the run
// with an error instead of killing it, the reply so far kept, and so does a file-size limit. With
// --store the turns are there for the next run.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "chat_cli_support.h"
#include "support/shared_assets.h"
#include "support/shell.h"
#include "support/synth_model.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;
namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) { return shell_quote(s); }

// A model that writes a reply of about 4,000 tokens slowly enough (on one thread) for a
// signal sent at its first text to land while it is written.
std::string slow_reply_model(const TempDir& dir) {
  SynthSpec spec;
  spec.dim = 512;
  spec.hidden_dim = 1024;
  spec.n_layers = 4;
  spec.n_heads = 8;
  spec.context_length = 4096;
  const std::string path = (dir.path() / "slow.gguf").string();
  write_gguf(spec, make_synth_weights(spec), make_spm_vocab(spec.n_vocab), path);
  return path;
}

// parley-chat on `model` with the store `store` and the conversation s; `flags` come last.
std::string chat_command(const std::string& model, const fs::path& store,
                         const std::string& flags) {
  return std::string(PARLEY_CHAT_EXE) + " -m " + quote(model) + " --store " +
         quote(store.string()) + " --session s --template raw --temp 0 " + flags;
}

// A shell prefix that runs a program with the signals' default handling, which the test's
// own runner may have changed (an ignored signal stays ignored across exec).
std::string default_signals() {
  const bool have = run_shell("env --default-signal true 2>/dev/null").exit_code == 0;
  return have ? "env --default-signal " : "";
}

// `command` in the background, stdin from a pipe kept open (no end of input), stdout and
// stderr to files in `dir`; once its stdout holds `ready` (a grep pattern; any text when
// empty), the signal `signal_name` (as kill(1) takes it) is sent to it. Prints "rc=N" with its
// exit status. Bounded: nothing waits forever.
ShellRun signal_when_ready(const TempDir& dir, const std::string& command, const std::string& input,
                           const std::string& ready, const std::string& signal_name) {
  const std::string in = quote((dir / "in").string()), out = quote((dir / "out.txt").string());
  const std::string err = quote((dir / "err.txt").string());
  const std::string is_ready =
      ready.empty() ? "[ -s " + out + " ]" : "grep -q " + quote(ready) + " " + out;
  // No earlier run's output may look like this one's.
  const std::string start = "rm -f " + in + " " + out + "; mkfifo " + in + "; " +
                            default_signals() + command + " < " + in + " > " + out + " 2> " + err +
                            " & pid=$!; ";
  const std::string feed = "exec 3> " + in + "; printf '%s' " + quote(input) + " >&3; ";
  const std::string until_ready = "i=0; until " + is_ready +
                                  " || ! kill -0 $pid 2>/dev/null || [ $i -ge 3000 ]; do " +
                                  "i=$((i+1)); sleep 0.01; done; ";
  const std::string script =
      start + feed + until_ready + "kill -" + signal_name + " $pid; wait $pid; echo rc=$?";
  return run_shell("timeout 120 sh -c " + quote(script));
}

std::string file_text(const TempDir& dir, const std::string& name) {
  return run_shell("cat " + quote((dir / name).string())).out;
}

// The "stored, not open" line of conversation s in a later run's /sessions: "  - s  N turns,
// ..."; empty when it is not stored.
std::string stored_line(const std::string& model, const fs::path& store) {
  const ShellRun r = run_shell("printf '/sessions\\n' | " + std::string(PARLEY_CHAT_EXE) + " -m " +
                               quote(model) + " --store " + quote(store.string()) + " 2>&1");
  const size_t at = r.out.find("\n  - s  ");
  if (at == std::string::npos) return "";
  return r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST_CASE("console: SIGTERM and SIGHUP stop a reply, keep it, and end the run") {
  TempDir dir;
  const std::string model = slow_reply_model(dir);
  for (const auto& [signal_name, status] : {std::pair{"TERM", 143}, std::pair{"HUP", 129}}) {
    INFO("signal: SIG" << signal_name);
    const fs::path store = dir / (std::string(signal_name) + ".db");
    const std::string chat = chat_command(model, store, "-n 0 --ignore-eos --threads 1");
    const ShellRun r = signal_when_ready(dir, chat, "a b c\n", "", signal_name);
    INFO("stdout: " << file_text(dir, "out.txt"));
    INFO("stderr: " << file_text(dir, "err.txt"));
    CHECK(r.out.find("rc=" + std::to_string(status) + "\n") != std::string::npos);
    CHECK(file_text(dir, "out.txt").find("\n[stopped]\n") != std::string::npos);
    // The message and the reply so far, as a Ctrl-C leaves them.
    CHECK(stored_line(model, store).rfind("  - s  2 turns, ", 0) == 0);
  }
}

TEST_CASE("console: SIGTERM or SIGHUP at the prompt ends it as the end of input does") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  for (const auto& [signal_name, status] : {std::pair{"TERM", 143}, std::pair{"HUP", 129}}) {
    INFO("signal: SIG" << signal_name);
    const fs::path store = dir / (std::string(signal_name) + ".db");
    const std::string chat = chat_command(gguf.string(), store, "-n 8");
    const ShellRun r = signal_when_ready(dir, chat, "Once upon a time\n/sessions\n",
                                         "^\\* s  2 turns", signal_name);
    INFO("stdout: " << file_text(dir, "out.txt"));
    INFO("stderr: " << file_text(dir, "err.txt"));
    CHECK(r.out.find("rc=" + std::to_string(status) + "\n") != std::string::npos);
    // Closed as at the end of input: the KV went to the store with the turns.
    const std::string stored = stored_line(gguf.string(), store);
    CHECK(stored.rfind("  - s  2 turns, ", 0) == 0);
    CHECK(stored.find(", 0 KV bytes stored") == std::string::npos);
  }
}

TEST_CASE("one-shot: SIGTERM stops the reply, keeps it, and ends the run with its status") {
  TempDir dir;
  const std::string model = slow_reply_model(dir);
  const fs::path store = dir / "s.db";
  const std::string chat = chat_command(model, store, "-n 0 --ignore-eos --threads 1 -p 'a b c'");
  const ShellRun r = signal_when_ready(dir, chat, "", "", "TERM");
  const std::string err = file_text(dir, "err.txt");
  INFO("stderr: " << err);
  CHECK(r.out.find("rc=143\n") != std::string::npos);
  CHECK(err.find("parley-chat: stopped\n") != std::string::npos);
  CHECK(stored_line(model, store).rfind("  - s  2 turns, ", 0) == 0);
}

TEST_CASE("a stdout whose reader went away fails the run; the reply so far is kept") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string go = quote((dir / "go").string()), rc = quote((dir / "rc").string());
  const std::string err = quote((dir / "err.txt").string());
  for (const std::string mode : {"console", "one-shot"}) {
    INFO("mode: " << mode);
    const fs::path store = dir / (mode + ".db");
    const std::string flags = mode == "console" ? "-n 64" : "-n 64 -p 'Once upon a time'";
    // The reader closes its end, then lets parley-chat start: its first write finds no one.
    const std::string script =
        "rm -f " + go + "; mkfifo " + go + "; printf 'Once upon a time\\n' | { read x < " + go +
        "; " + default_signals() + chat_command(gguf.string(), store, flags) + " 2> " + err +
        "; echo $? > " + rc + "; } | { exec 0<&-; echo > " + go + "; }";
    run_shell("timeout 120 sh -c " + quote(script));
    const ShellRun status = run_shell("cat " + rc);
    const ShellRun said = run_shell("cat " + err);
    INFO("stderr: " << said.out);
    CHECK(status.out == "1\n");
    CHECK(said.out.find("parley-chat: error: cannot write the reply to standard output: ") !=
          std::string::npos);
    CHECK(stored_line(gguf.string(), store).rfind("  - s  2 turns, ", 0) == 0);
  }
}

TEST_CASE("a file-size limit the store reaches fails the run with an error instead of killing it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  // 64 blocks (of 512 bytes in sh): too little for a new store's first commit.
  const std::string script = "ulimit -f 64; " + default_signals() +
                             chat_command(gguf.string(), dir / "s.db", "-n 8 -p 'Once'");
  const ShellRun r = run_shell("timeout 120 sh -c " + quote(script) + " 2>&1");
  INFO("output: " << r.out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("parley-chat: error: cannot open the store ") != std::string::npos);
}

#endif  // PARLEY_CHAT_EXE
