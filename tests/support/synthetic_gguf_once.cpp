// synthetic_gguf_once (synth_model.h), apart from the writers: it needs TempDir, which the
// fuzz file writer, a user of those writers, does not link.
#include <map>
#include <memory>
#include <mutex>

#include "support/shared_assets.h"
#include "support/synth_model.h"

namespace parley::test {

const std::string& synthetic_gguf_once(const std::string& name, const SynthSpec& spec) {
  static std::mutex mutex;
  static const auto dir = std::make_unique<TempDir>();
  static std::map<std::string, std::string> written;
  std::lock_guard lock(mutex);
  auto it = written.find(name);
  if (it == written.end()) {
    const std::string path = (dir->path() / (name + ".gguf")).string();
    write_gguf(spec, make_synth_weights(spec), make_spm_vocab(spec.n_vocab), path);
    it = written.emplace(name, path).first;
  }
  return it->second;
}

}  // namespace parley::test
