// sentencepiece ModelProto bytes without libprotobuf. Debian ships no sentencepiece_model.pb.h,
// so the few fields Parley needs are written and read with a minimal protobuf wire-format codec
// (field numbers from sentencepiece_model.proto).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer_source.h"

namespace parley::text {

// ModelProto.SentencePiece.Type; GGUF tokenizer.ggml.token_type uses the same numbers.
enum class PieceType : int32_t {
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

// "NORMAL", "CONTROL", ... as sentencepiece_model.proto names them, for messages.
const char* type_name(PieceType type);

// The byte of a byte piece written as sentencepiece writes them ("<0x0A>": upper-case hex);
// nullopt for anything else.
std::optional<uint8_t> parse_byte_piece(std::string_view piece);

// Checks that a GGUF "llama" vocabulary can become a sentencepiece model: equal array sizes,
// known token types, non-empty pieces, none or all 256 byte pieces (well-formed, each once),
// no piece twice (among the normal, user-defined and unused ones, or among the others),
// exactly one unknown piece, at unk_id, BOS/EOS in range and of type control (or user-defined
// chat markers, which load as control pieces). Throws Error(bad_model) naming the problem.
void validate_gguf_vocab(const model::GgufVocab& vocab);

// A serialized ModelProto for a vocabulary that passed validate_gguf_vocab: BPE (what GGUF
// "llama" means), byte fallback when there are byte pieces, identity normalizer with the
// vocabulary's space-prefix and whitespace flags.
std::string build_spm_model_proto(const model::GgufVocab& vocab);

// What Parley reads back from a serialized ModelProto (sentencepiece's C++ API of this
// version exposes neither the user-defined piece type nor the normalizer settings).
struct SpmModelInfo {
  std::vector<PieceType> piece_types;  // [n_pieces]
  bool add_dummy_prefix = true;        // normalizer_spec.add_dummy_prefix (proto default true)
};

// Throws Error(bad_model) on malformed wire data.
SpmModelInfo read_spm_model_info(std::string_view model_proto);

// The same model with normalizer_spec.add_dummy_prefix false, for text that continues other
// text ("," after "time" is one piece, not U+2581 and then ",").
std::string without_dummy_prefix(std::string_view model_proto);

// A tokenizer.model with the tokens a Hugging Face directory adds appended as pieces (special
// ones CONTROL, the others USER_DEFINED, as GGUF converters type them), then UNUSED pieces
// "<|pad_N|>" (another name where that one is taken) up to added.pad_to, so that every row
// of a vocabulary padded to a round size has a piece.
struct ExtendedModelProto {
  std::string model_proto;
  int32_t n_own = 0;      // the tokenizer.model's pieces
  int32_t n_added = 0;    // added tokens appended
  int32_t n_padding = 0;  // UNUSED pieces appended
};
// Added tokens whose ids are inside the tokenizer.model must be its pieces there; the others
// must follow on from its pieces without a gap, and be no piece already. Throws
// Error(bad_model) naming the file and both pieces or counts, also when the pieces outnumber
// pad_to, or on malformed wire data.
ExtendedModelProto append_added_pieces(std::string_view model_proto,
                                       const model::AddedPieces& added);

// Whether a piece is written as chat markers are: "<|" ... "|>" ("<|im_start|>", "<|user|>"),
// or is one of the chat templates' bracketed markers ("[INST]", "[/INST]", "<<SYS>>",
// "<</SYS>>").
bool looks_like_control(std::string_view piece);

// Some GGUF converters and trainers type chat markers USER_DEFINED, and sentencepiece matches
// user-defined pieces inside plain text: a user typing "<|im_start|>" or "[/INST]" would get
// the marker, and could end their turn and write the assistant's.
// The pieces of that type that look like control pieces are made CONTROL instead (as
// llama.cpp's loader does), so that only Parley can insert them (by id, from a template).
struct ControlLookingPieces {
  std::string model_proto;          // the same proto, with those pieces' type CONTROL
  std::vector<std::string> pieces;  // the pieces changed, in vocabulary order
};
// Throws Error(bad_model) on malformed wire data.
ControlLookingPieces mark_control_looking_pieces(std::string_view model_proto);

}  // namespace parley::text
