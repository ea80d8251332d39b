// A made-up sentencepiece vocabulary of any size (>= 259), so the engine's tokenizer, chat
// templates and detokenizer work on synthetic models.
#pragma once

#include <cstdint>

#include "model/tokenizer_source.h"

namespace parley::bench {

// <unk>, <s>, </s>, the 256 byte pieces <0x00>..<0xFF>, then "▁", single characters, "▁x",
// letter pairs, "▁xy", letter triples ... in falling score order, so that BPE merges build
// English words from pieces that exist (anything else falls back to bytes).
model::GgufVocab make_synthetic_vocab(int32_t n_vocab);

}  // namespace parley::bench
