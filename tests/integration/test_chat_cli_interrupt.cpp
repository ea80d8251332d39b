// Ctrl-C in parley-chat stops a reply also while a long message is still being read: the
// one-shot run ends "stopped" with no reply token, instead of waiting for the whole prompt
// and then writing one.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "support/shared_assets.h"
#include "support/shell.h"
#include "support/synth_model.h"

#ifdef PARLEY_CHAT_EXE

using namespace parley::test;

namespace {

// Reading a message of ~1,900 tokens takes this model about a second on one thread: long
// enough for a signal sent as the run starts to land while the message is read.
std::string slow_prompt_model(const TempDir& dir) {
  SynthSpec spec;
  spec.dim = 512;
  spec.hidden_dim = 1024;
  spec.n_layers = 4;
  spec.n_heads = 8;
  spec.context_length = 2048;
  const std::string path = (dir.path() / "slow.gguf").string();
  write_gguf(spec, make_synth_weights(spec), make_spm_vocab(spec.n_vocab), path);
  return path;
}

}  // namespace

TEST_CASE("Ctrl-C while a long message is read stops the one-shot run before any reply") {
  TempDir dir;
  const std::string model = slow_prompt_model(dir);
  std::string prompt;
  for (int i = 0; i < 600; ++i) prompt += "a b c ";
  const std::string err = (dir.path() / "err.txt").string();
  const std::string store = (dir.path() / "s.db").string();
  // The run catches SIGINT right before it sends (SigCgt in /proc, SIGINT = bit 1): the signal
  // goes then. Sent earlier it would be lost (a background job starts with SIGINT ignored), or,
  // before the exec (the forked shell may catch it), end the run.
  if (!std::filesystem::exists("/proc/self/status")) {
    MESSAGE("skipped: no /proc to see when parley-chat catches Ctrl-C");
    return;
  }
  const std::string script =
      std::string(PARLEY_CHAT_EXE) + " -m " + shell_quote(model) + " --store " +
      shell_quote(store) + " --template raw --temp 0 -n 16 --ignore-eos --threads 1" +
      " --print-ids -p " + shell_quote(prompt) + " 2>" + shell_quote(err) + " & pid=$!; " +
      "until ! kill -0 $pid 2>/dev/null || { [ \"$(cat /proc/$pid/comm)\" = parley-chat ] && " +
      "m=$(awk '/^SigCgt/ {print $2}' /proc/$pid/status) && " +
      "[ $(( 0x${m:-0} & 2 )) -ne 0 ]; }; do sleep 0.01; done; " +
      "kill -INT $pid; wait $pid; echo rc=$?";
  const ShellRun r = run_shell("sh -c " + shell_quote(script));
  const ShellRun e = run_shell("cat " + shell_quote(err));
  INFO("stdout: " << r.out);
  INFO("stderr: " << e.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("rc=1") != std::string::npos);
  CHECK(r.out.find("ids:\n") != std::string::npos);  // no reply token
  const size_t stopped = e.out.find("parley-chat: stopped");
  CHECK(stopped != std::string::npos);
  // The stopped turn (the message, an empty reply) is kept, so the run says where, after.
  CHECK(e.out.find("parley-chat: stored as session ", stopped) != std::string::npos);
}

#endif  // PARLEY_CHAT_EXE
