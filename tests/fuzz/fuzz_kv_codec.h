// The KV codec's fuzz entry point and seed corpus (fuzz_kv_codec.cpp). Any input must end in
// a clean Error or a successful decode that round-trips; anything else is a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/block_layout.h"

namespace parley::test {

inline constexpr uint64_t kFuzzFingerprint = 0x5eed5eed5eed5eedull;

// The layout (and kFuzzFingerprint the model) every input is decoded against first.
const kv::BlockLayout& fuzz_kv_layout();

// Valid blobs of several types, fills and filter settings, and a few near misses; built at
// run time, so no binary file is kept in the tree.
std::vector<std::vector<uint8_t>> kv_codec_seed_corpus();

int fuzz_kv_codec_one_input(const uint8_t* data, size_t size);

}  // namespace parley::test

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
