#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "model/mapped_file.h"
#include "model/model_loader.h"
#include "model/placeholder_file.h"
#include "model/text_file.h"
#include "support/error_check.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using parley::Status;
using parley::model::load_model;
using parley::model::MappedFile;
using parley::model::read_text_file;
using parley::model::refuse_placeholder_file;
namespace fs = std::filesystem;

namespace {

// What `git clone` writes for an LFS-tracked file when git-lfs is not installed.
const std::string kLfsPointer =
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 1054464\n";

constexpr const char* kLfsAdvice =
    "is a Git LFS pointer, not the file itself: fetch it with `git lfs pull`";

// A Hugging Face directory of a small random model, with a placeholder tokenizer.model (the
// loader hands its bytes on unparsed).
fs::path write_hf_model(const parley::test::TempDir& tmp, int n_shards = 1) {
  parley::test::SynthSpec spec;
  parley::test::write_bytes(tmp / "tok.model", "x");
  parley::test::HfDirOptions options;
  options.n_shards = n_shards;
  const fs::path dir = tmp / "m";
  parley::test::write_hf_dir(spec, parley::test::make_synth_weights(spec), dir, tmp / "tok.model",
                             options);
  return dir;
}

}  // namespace

TEST_CASE("refuse_placeholder_file: empty files and Git LFS pointers, nothing else") {
  CHECK_PARLEY_ERROR(refuse_placeholder_file("a/model.gguf", ""), Status::bad_model,
                     "'a/model.gguf' is empty (0 bytes)");
  CHECK_PARLEY_ERROR(refuse_placeholder_file("a/model.gguf", kLfsPointer), Status::bad_model,
                     "'a/model.gguf' ", kLfsAdvice);
  CHECK_NOTHROW(refuse_placeholder_file("a/model.gguf", "GGUF\x03"));
  CHECK_NOTHROW(refuse_placeholder_file("config.json", "{\"version\": \"https://git-lfs\"}"));
  CHECK_NOTHROW(refuse_placeholder_file("x", "version https://example.com/spec/v1\n"));
}

TEST_CASE("MappedFile and read_text_file refuse empty files and Git LFS pointers") {
  parley::test::TempDir tmp;
  const fs::path pointer = tmp / "model.safetensors";
  const fs::path empty = tmp / "tokenizer.model";
  parley::test::write_bytes(pointer, kLfsPointer);
  parley::test::write_bytes(empty, "");
  CHECK_PARLEY_ERROR(MappedFile(pointer.string()), Status::bad_model, pointer.string(), kLfsAdvice);
  CHECK_PARLEY_ERROR(MappedFile(empty.string()), Status::bad_model, empty.string(),
                     "is empty (0 bytes)");
  CHECK_PARLEY_ERROR(read_text_file(pointer, 1000), Status::bad_model, pointer.string(),
                     kLfsAdvice);
  CHECK_PARLEY_ERROR(read_text_file(empty, 1000), Status::bad_model, empty.string(),
                     "is empty (0 bytes)");
  parley::test::write_bytes(tmp / "a.json", "{}");
  CHECK(read_text_file(tmp / "a.json", 1000) == "{}");
  CHECK(MappedFile((tmp / "a.json").string()).bytes().size() == 2);
}

TEST_CASE("loader: a Git LFS pointer or an empty file in place of a model file names the file") {
  parley::test::TempDir tmp;
  SUBCASE("a .gguf") {
    parley::test::write_bytes(tmp / "model.gguf", kLfsPointer);
    CHECK_PARLEY_ERROR(load_model((tmp / "model.gguf").string()), Status::bad_model, "model.gguf",
                       kLfsAdvice);
  }
  SUBCASE("model.safetensors") {
    const fs::path dir = write_hf_model(tmp);
    parley::test::write_bytes(dir / "model.safetensors", kLfsPointer);
    CHECK_PARLEY_ERROR(load_model(dir.string()), Status::bad_model, "model.safetensors",
                       kLfsAdvice);
    parley::test::write_bytes(dir / "model.safetensors", "");
    CHECK_PARLEY_ERROR(load_model(dir.string()), Status::bad_model, "model.safetensors",
                       "is empty (0 bytes)");
  }
  SUBCASE("a shard") {
    const fs::path dir = write_hf_model(tmp, 2);
    const fs::path shard = dir / "model-00002-of-00002.safetensors";
    REQUIRE(fs::exists(shard));
    parley::test::write_bytes(shard, kLfsPointer);
    CHECK_PARLEY_ERROR(load_model(dir.string()), Status::bad_model,
                       "model-00002-of-00002.safetensors", kLfsAdvice);
  }
  SUBCASE("tokenizer.model") {
    const fs::path dir = write_hf_model(tmp);
    parley::test::write_bytes(dir / "tokenizer.model", kLfsPointer);
    CHECK_PARLEY_ERROR(load_model(dir.string()), Status::bad_model, "tokenizer.model", kLfsAdvice);
    parley::test::write_bytes(dir / "tokenizer.model", "");
    CHECK_PARLEY_ERROR(load_model(dir.string()), Status::bad_model, "tokenizer.model",
                       "is empty (0 bytes)");
  }
}
