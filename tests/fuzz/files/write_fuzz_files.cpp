// Writes the seed corpora and the regression corpus with its MANIFEST:
//   parley-fuzz-write-files tests/fuzz
// The files are committed; rerun this when a case is added or changed.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "files/fuzz_files.h"

namespace fs = std::filesystem;
using parley::test::FuzzFile;

namespace {

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <tests/fuzz directory>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  size_t n_seeds = 0;
  for (const auto& group : {parley::test::gguf_seeds(), parley::test::safetensors_seeds(),
                            parley::test::kv_codec_seeds(), parley::test::text_seeds(),
                            parley::test::conversation_seeds()}) {
    for (const FuzzFile& f : group) write(root / "corpus" / f.path, f.bytes), ++n_seeds;
  }
  fs::create_directories(root / "regressions");
  std::ofstream manifest(root / "regressions" / "MANIFEST");
  manifest << "# Regression corpus: one hand-built bad file per bug class, written by\n"
              "# tests/fuzz/files (parley-fuzz-write-files). Columns, tab-separated:\n"
              "# file; status (PARLEY_E_<status>: of parley_engine_open for model files, of\n"
              "# the KV codec for blobs, OK for a blob that is only wrong where it is stored);\n"
              "# what a session's restore makes of a blob; a piece of the error message that\n"
              "# names the field; the bug class.\n";
  size_t n_regressions = 0;
  for (const auto& group : {parley::test::gguf_regressions(),
                            parley::test::safetensors_regressions(),
                            parley::test::kv_regressions()}) {
    for (const FuzzFile& f : group) {
      write(root / "regressions" / f.path, f.bytes);
      manifest << f.path << '\t' << f.status << '\t' << f.outcome << '\t' << f.field << '\t'
               << f.bug << '\n';
      ++n_regressions;
    }
  }
  std::printf("wrote %zu seeds and %zu regressions under %s\n", n_seeds, n_regressions,
              root.c_str());
  return 0;
}
