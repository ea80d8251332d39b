// The committed inputs of the fuzz targets, as code: seed corpora and the regression corpus of
// hand-built bad files with their documented outcomes. write_fuzz_files.cpp writes them into
// tests/fuzz; test_regressions.cpp checks the committed files against MANIFEST.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/block_layout.h"

namespace parley::test {

struct FuzzFile {
  std::string path;   // relative to corpus/ or regressions/
  std::string bytes;
  // Regressions only (the MANIFEST columns):
  std::string status;   // "BAD_MODEL", "CORRUPT", ... (parley_status_name without PARLEY_E_)
  std::string outcome;  // KV blobs: what a restore makes of it ("REBUILT"); "-" otherwise
  std::string field;    // a piece of the error message that names the offending field
  std::string bug;      // the bug class this file stands for
};

// Seeds, by target: paths are "<target>/<name>".
std::vector<FuzzFile> gguf_seeds();
std::vector<FuzzFile> safetensors_seeds();
std::vector<FuzzFile> kv_codec_seeds();
std::vector<FuzzFile> text_seeds();
std::vector<FuzzFile> conversation_seeds();

// Regressions: "gguf/...", "safetensors/...", "kv/...".
std::vector<FuzzFile> gguf_regressions();
std::vector<FuzzFile> safetensors_regressions();
std::vector<FuzzFile> kv_regressions();

// The model every model regression is a broken copy of: Llama, dim 8, 2 heads of 4, 1 KV
// head, 1 layer, FFN 16, vocabulary 264, context 64, F32, output tied to the embedding.
std::string tiny_gguf_file();          // as a GGUF file
std::string tiny_safetensors_file();   // its weights as model.safetensors
std::string tiny_hf_config_json();     // config.json for those weights
std::string tiny_tokenizer_model();    // a sentencepiece tokenizer.model for its vocabulary

// KV regressions are blobs of the tiny model's INT8 layout, under a fixed fingerprint (the
// test puts the real model's in when it plants them in a store).
inline constexpr uint64_t kRegressionFingerprint = 0x7e57b10b5eedf00dull;
inline const kv::KvShape kRegressionKvShape{1, 1, 4};
inline constexpr kv::KvType kRegressionKvType = kv::KvType::int8;

}  // namespace parley::test
