// Prompts of a wanted length in tokens, made of ordinary English, so that a real tokenizer
// splits them as it would a real prompt.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace parley::bench {

// A run of words, starting at word `offset` of a fixed English text (cycled), that encodes
// to `n_tokens` ids: exactly when some cut of the text gives that many, else just above.
std::string text_of_tokens(const text::Tokenizer& tokenizer, size_t n_tokens, size_t offset = 0);

// Short user messages (a few words each), different from one another.
const std::vector<std::string>& short_messages();

}  // namespace parley::bench
