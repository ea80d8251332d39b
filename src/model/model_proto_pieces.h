// How many pieces a sentencepiece tokenizer.model holds, read without the tokenizer (which
// the model files' checks and fingerprint come before).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace parley::model {

// The number of ModelProto.pieces (field 1) in serialized tokenizer.model bytes; nullopt when
// the bytes are not well-formed protobuf (the tokenizer then refuses them, naming the fault).
std::optional<int32_t> count_model_proto_pieces(std::string_view model_proto);

}  // namespace parley::model
