// The tokens a Hugging Face tokenizer adds to its tokenizer.model (chat markers of a
// fine-tune, such as ChatML's <|im_start|> and <|im_end|>).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "model/tokenizer_source.h"

namespace parley::model {

// tokenizer_config.json's added_tokens_decoder ({"512": {"content": ..., "special": ...}});
// nullopt when the key is absent. Throws Error(bad_model) naming the file when malformed.
std::optional<std::vector<AddedToken>> added_tokens_from_tokenizer_config(std::string_view json);

// tokenizer.json's added_tokens ([{"id": 512, "content": ..., "special": ...}]); nullopt when
// the key is absent. Throws as above.
std::optional<std::vector<AddedToken>> added_tokens_from_tokenizer_json(std::string_view json);

// added_tokens.json ({"<|im_end|>": 512}), which says nothing of specialness: a token is
// special when special_tokens_map.json (`special_map_json`, "" when absent) names it, as
// transformers reads it. Throws as above.
std::vector<AddedToken> added_tokens_from_added_tokens_json(std::string_view json,
                                                            std::string_view special_map_json);

// The added tokens of a model directory, from the first of tokenizer_config.json (its text
// given, "" when absent), tokenizer.json and added_tokens.json that lists them; pad_to is
// left 0. Sorted by id.
AddedPieces read_added_tokens(const std::filesystem::path& dir, std::string_view tokenizer_config);

}  // namespace parley::model
