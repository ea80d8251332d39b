#include "text/spm_model_proto.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "common/error.h"
#include "common/protobuf_wire.h"

namespace parley::text {
namespace {

using protobuf::kWireLengthDelimited;
using protobuf::kWireVarint;
using protobuf::WireReader;
using protobuf::WireWriter;

// Field numbers of sentencepiece_model.proto.
namespace field {
constexpr uint32_t kModelPieces = 1;
constexpr uint32_t kModelTrainerSpec = 2;
constexpr uint32_t kModelNormalizerSpec = 3;

constexpr uint32_t kPiecePiece = 1;
constexpr uint32_t kPieceScore = 2;
constexpr uint32_t kPieceType = 3;

constexpr uint32_t kTrainerModelType = 3;
constexpr uint32_t kTrainerVocabSize = 4;
constexpr uint32_t kTrainerByteFallback = 35;
constexpr uint32_t kTrainerUnkId = 40;
constexpr uint32_t kTrainerBosId = 41;
constexpr uint32_t kTrainerEosId = 42;
constexpr uint32_t kTrainerPadId = 43;
constexpr uint32_t kTrainerUnkPiece = 45;
constexpr uint32_t kTrainerBosPiece = 46;
constexpr uint32_t kTrainerEosPiece = 47;
constexpr uint32_t kTrainerPadPiece = 48;

constexpr uint32_t kNormalizerName = 1;
constexpr uint32_t kNormalizerAddDummyPrefix = 3;
constexpr uint32_t kNormalizerRemoveExtraWhitespaces = 4;
constexpr uint32_t kNormalizerEscapeWhitespaces = 5;
}  // namespace field

constexpr uint64_t kModelTypeBpe = 2;  // TrainerSpec.ModelType.BPE

// GGUF leaves token_type out when every token is normal.
PieceType type_of(const model::GgufVocab& vocab, size_t id) {
  return vocab.token_types.empty() ? PieceType::normal : PieceType(vocab.token_types[id]);
}

std::string describe(const model::GgufVocab& vocab, size_t id) {
  return "token " + std::to_string(id) + " ('" + vocab.tokens[id] + "')";
}

// The type a piece has once loaded: user-defined chat markers become control
// (mark_control_looking_pieces), so a ChatML model's EOS may be a user-defined <|im_end|>.
PieceType loaded_type_of(const model::GgufVocab& vocab, size_t id) {
  const PieceType type = type_of(vocab, id);
  const bool marker = type == PieceType::user_defined && looks_like_control(vocab.tokens[id]);
  return marker ? PieceType::control : type;
}

void require_special(const model::GgufVocab& vocab, const char* key, int32_t id, PieceType type) {
  const size_t n = vocab.tokens.size();
  require(id >= 0 && size_t(id) < n, Status::bad_model,
          std::string("tokenizer.ggml.") + key + " " + std::to_string(id) +
              " is outside the vocabulary [0, " + std::to_string(n) + ")");
  const PieceType actual = loaded_type_of(vocab, size_t(id));
  require(actual == type, Status::bad_model,
          std::string("tokenizer.ggml.") + key + " names " + describe(vocab, size_t(id)) +
              " of type " + type_name(actual) + "; it must be " + type_name(type));
}

// sentencepiece keeps normal, user-defined and unused pieces in one map and the others in
// another: the same piece twice in one map stops it loading.
void check_no_duplicate_pieces(const model::GgufVocab& vocab) {
  std::unordered_map<std::string_view, size_t> first_ids[2];
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    const PieceType type = loaded_type_of(vocab, i);
    const bool plain =
        type == PieceType::normal || type == PieceType::user_defined || type == PieceType::unused;
    // (No structured binding: clang's C++20 cannot capture one in the lambda.)
    const auto inserted = first_ids[plain].emplace(vocab.tokens[i], i);
    require(inserted.second, Status::bad_model, [&] {
      return "tokenizer.ggml.tokens: piece '" + vocab.tokens[i] + "' appears twice (ids " +
             std::to_string(inserted.first->second) + " and " + std::to_string(i) + ")";
    });
  }
}

std::vector<std::string_view> piece_texts(std::string_view model_proto) {
  std::vector<std::string_view> texts;
  WireReader model(model_proto, "tokenizer model", "ModelProto");
  while (!model.done()) {
    const auto f = model.next();
    if (f.number != field::kModelPieces || f.wire_type != kWireLengthDelimited) continue;
    std::string_view text;
    WireReader piece(f.bytes, "tokenizer model", "SentencePiece");
    while (!piece.done()) {
      const auto pf = piece.next();
      if (pf.number == field::kPiecePiece && pf.wire_type == kWireLengthDelimited) {
        text = pf.bytes;
      }
    }
    texts.push_back(text);
  }
  return texts;
}

void append_piece(WireWriter& model, std::string_view text, PieceType type) {
  WireWriter piece;
  piece.bytes(field::kPiecePiece, text);
  piece.float32(field::kPieceScore, 0.0f);
  piece.varint(field::kPieceType, uint64_t(type));
  model.bytes(field::kModelPieces, piece.data());
}

std::string quoted(int32_t id, std::string_view text) {
  return std::to_string(id) + " '" + std::string(text) + "'";
}

// Appends the added tokens past the tokenizer.model's pieces; `ids` maps every piece to its id.
int32_t append_added_tokens(const model::AddedPieces& added,
                            const std::vector<std::string_view>& own,
                            std::unordered_map<std::string, int32_t>& ids, WireWriter& model) {
  const std::string file = added.tokens_file + ": added token ";
  std::vector<model::AddedToken> tokens = added.tokens;
  std::stable_sort(tokens.begin(), tokens.end(),
                   [](const auto& a, const auto& b) { return a.id < b.id; });
  int32_t next = int32_t(own.size());
  for (const model::AddedToken& token : tokens) {
    if (token.id < int32_t(own.size())) {
      require(own[size_t(token.id)] == token.content, Status::bad_model, [&] {
        return file + quoted(token.id, token.content) + " is not tokenizer.model's piece " +
               quoted(token.id, own[size_t(token.id)]);
      });
      continue;
    }
    require(token.id >= next, Status::bad_model, [&] {
      return file + quoted(token.id, token.content) + " has the id of another added token";
    });
    require(token.id == next, Status::bad_model, [&] {
      return file + quoted(token.id, token.content) + " leaves a gap: the ids past " +
             "tokenizer.model's " + std::to_string(own.size()) + " pieces must follow on from " +
             "them, and the next is " + std::to_string(next);
    });
    const auto inserted = ids.emplace(token.content, token.id);
    require(inserted.second, Status::bad_model, [&] {
      return file + quoted(token.id, token.content) + " is already piece " +
             std::to_string(inserted.first->second);
    });
    append_piece(model, token.content,
                 token.special ? PieceType::control : PieceType::user_defined);
    ++next;
  }
  return next - int32_t(own.size());
}

// A padding piece's name: "<|pad_N|>", lengthened until no piece has it.
std::string padding_name(int32_t id, const std::unordered_map<std::string, int32_t>& ids) {
  std::string name = "<|pad_" + std::to_string(id) + "|>";
  while (ids.count(name)) name.insert(name.size() - 2, "_");
  return name;
}

bool has_byte_pieces(const model::GgufVocab& vocab) {
  for (size_t i = 0; i < vocab.token_types.size(); ++i) {
    if (type_of(vocab, i) == PieceType::byte) return true;
  }
  return false;
}

}  // namespace

const char* type_name(PieceType type) {
  switch (type) {
    case PieceType::normal: return "NORMAL";
    case PieceType::unknown: return "UNKNOWN";
    case PieceType::control: return "CONTROL";
    case PieceType::user_defined: return "USER_DEFINED";
    case PieceType::unused: return "UNUSED";
    case PieceType::byte: return "BYTE";
  }
  return "?";
}

std::optional<uint8_t> parse_byte_piece(std::string_view piece) {
  // Exactly "<0xNN>" with upper-case hex digits: sentencepiece knows no other spelling.
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return uint8_t(value);
}

void validate_gguf_vocab(const model::GgufVocab& vocab) {
  const size_t n = vocab.tokens.size();
  require(n > 0, Status::bad_model, "tokenizer.ggml.tokens is empty");
  require(n <= size_t(std::numeric_limits<int32_t>::max()), Status::bad_model,
          "tokenizer.ggml.tokens has more entries than int32 ids can name");
  require(vocab.scores.empty() || vocab.scores.size() == n, Status::bad_model,
          "tokenizer.ggml.scores has " + std::to_string(vocab.scores.size()) +
              " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  require(vocab.token_types.empty() || vocab.token_types.size() == n, Status::bad_model,
          "tokenizer.ggml.token_type has " + std::to_string(vocab.token_types.size()) +
              " entries but tokenizer.ggml.tokens has " + std::to_string(n));

  std::optional<size_t> unknown;
  std::array<bool, 256> has_byte{};
  size_t n_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    require(!vocab.tokens[i].empty(), Status::bad_model, [&] {
      return "token " + std::to_string(i) + " of tokenizer.ggml.tokens is an empty string";
    });
    if (!vocab.token_types.empty()) {
      const int32_t t = vocab.token_types[i];
      require(t >= int32_t(PieceType::normal) && t <= int32_t(PieceType::byte), Status::bad_model,
              [&] {
                return describe(vocab, i) + " has tokenizer.ggml.token_type " +
                       std::to_string(t) + "; sentencepiece knows types 1..6";
              });
    }
    const PieceType type = type_of(vocab, i);
    if (type == PieceType::byte) {
      const auto byte = parse_byte_piece(vocab.tokens[i]);
      require(byte.has_value(), Status::bad_model, [&] {
        return describe(vocab, i) + " is of type BYTE but is not written <0xNN>";
      });
      require(!has_byte[*byte], Status::bad_model,
              [&] { return describe(vocab, i) + " appears twice"; });
      has_byte[*byte] = true;
      ++n_bytes;
    }
    if (type == PieceType::unknown) {
      // Not require(): its message would read *unknown before the check, while it is empty.
      if (unknown) {
        fail(Status::bad_model, describe(vocab, *unknown) + " and " + describe(vocab, i) +
                                    " are both of type UNKNOWN; sentencepiece allows one");
      }
      unknown = i;
    }
  }
  check_no_duplicate_pieces(vocab);
  // sentencepiece's byte fallback needs the whole set.
  require(n_bytes == 0 || n_bytes == 256, Status::bad_model,
          "the vocabulary has " + std::to_string(n_bytes) +
              " of the 256 byte pieces <0x00>..<0xFF>; byte fallback needs all of them");
  require(unknown.has_value(), Status::bad_model,
          "the vocabulary has no token of type UNKNOWN; sentencepiece needs one");
  require_special(vocab, "unknown_token_id", vocab.unk_id, PieceType::unknown);
  require_special(vocab, "bos_token_id", vocab.bos_id, PieceType::control);
  require_special(vocab, "eos_token_id", vocab.eos_id, PieceType::control);
  require(vocab.pad_id == -1 || (vocab.pad_id >= 0 && size_t(vocab.pad_id) < n), Status::bad_model,
          "tokenizer.ggml.padding_token_id " + std::to_string(vocab.pad_id) +
              " is outside the vocabulary [0, " + std::to_string(n) + ")");
}

std::string build_spm_model_proto(const model::GgufVocab& vocab) {
  WireWriter model;
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    WireWriter piece;
    piece.bytes(field::kPiecePiece, vocab.tokens[i]);
    piece.float32(field::kPieceScore, vocab.scores.empty() ? 0.0f : vocab.scores[i]);
    piece.varint(field::kPieceType, uint64_t(type_of(vocab, i)));
    model.bytes(field::kModelPieces, piece.data());
  }

  // The special ids are written with their pieces, so that sentencepiece's own bos_id() and
  // friends (which look pieces up by name) agree with the GGUF ids.
  WireWriter trainer;
  trainer.varint(field::kTrainerModelType, kModelTypeBpe);
  trainer.int32(field::kTrainerVocabSize, int32_t(vocab.tokens.size()));
  trainer.boolean(field::kTrainerByteFallback, has_byte_pieces(vocab));
  trainer.int32(field::kTrainerUnkId, vocab.unk_id);
  trainer.int32(field::kTrainerBosId, vocab.bos_id);
  trainer.int32(field::kTrainerEosId, vocab.eos_id);
  trainer.int32(field::kTrainerPadId, vocab.pad_id);
  trainer.bytes(field::kTrainerUnkPiece, vocab.tokens[size_t(vocab.unk_id)]);
  trainer.bytes(field::kTrainerBosPiece, vocab.tokens[size_t(vocab.bos_id)]);
  trainer.bytes(field::kTrainerEosPiece, vocab.tokens[size_t(vocab.eos_id)]);
  if (vocab.pad_id >= 0) trainer.bytes(field::kTrainerPadPiece, vocab.tokens[size_t(vocab.pad_id)]);
  model.bytes(field::kModelTrainerSpec, trainer.data());

  // GGUF carries no normalization rules: identity, with the two flags it does carry.
  WireWriter normalizer;
  normalizer.bytes(field::kNormalizerName, "identity");
  normalizer.boolean(field::kNormalizerAddDummyPrefix, vocab.add_space_prefix);
  normalizer.boolean(field::kNormalizerRemoveExtraWhitespaces, vocab.remove_extra_whitespaces);
  normalizer.boolean(field::kNormalizerEscapeWhitespaces, true);
  model.bytes(field::kModelNormalizerSpec, normalizer.data());
  return model.take();
}

SpmModelInfo read_spm_model_info(std::string_view model_proto) {
  SpmModelInfo info;
  WireReader model(model_proto, "tokenizer model", "ModelProto");
  while (!model.done()) {
    const auto f = model.next();
    if (f.wire_type != kWireLengthDelimited) continue;
    if (f.number == field::kModelPieces) {
      PieceType type = PieceType::normal;  // the proto default
      WireReader piece(f.bytes, "tokenizer model", "SentencePiece");
      while (!piece.done()) {
        const auto pf = piece.next();
        if (pf.number == field::kPieceType && pf.wire_type == kWireVarint) {
          type = PieceType(pf.value);
        }
      }
      info.piece_types.push_back(type);
    } else if (f.number == field::kModelNormalizerSpec) {
      // Repeated occurrences of a message field merge; the last value of a scalar wins.
      WireReader normalizer(f.bytes, "tokenizer model", "NormalizerSpec");
      while (!normalizer.done()) {
        const auto nf = normalizer.next();
        if (nf.number == field::kNormalizerAddDummyPrefix && nf.wire_type == kWireVarint) {
          info.add_dummy_prefix = nf.value != 0;
        }
      }
    }
  }
  return info;
}

std::string without_dummy_prefix(std::string_view model_proto) {
  // A message field written twice merges, and the scalar appended last wins.
  WireWriter normalizer;
  normalizer.boolean(field::kNormalizerAddDummyPrefix, false);
  WireWriter model;
  model.fields(model_proto);
  model.bytes(field::kModelNormalizerSpec, normalizer.data());
  return model.take();
}

ExtendedModelProto append_added_pieces(std::string_view model_proto,
                                       const model::AddedPieces& added) {
  const std::vector<std::string_view> own = piece_texts(model_proto);
  ExtendedModelProto result;
  result.n_own = int32_t(own.size());
  std::unordered_map<std::string, int32_t> ids;
  for (size_t id = 0; id < own.size(); ++id) ids.emplace(own[id], int32_t(id));
  WireWriter model;
  model.fields(model_proto);
  result.n_added = append_added_tokens(added, own, ids, model);
  const int32_t n_tokens = result.n_own + result.n_added;
  require(added.pad_to == 0 || n_tokens <= added.pad_to, Status::bad_model, [&] {
    return added.pad_to_source + " " + std::to_string(added.pad_to) + " is less than the " +
           std::to_string(n_tokens) + " tokens of tokenizer.model (" +
           std::to_string(result.n_own) + " pieces) and its added tokens (" +
           std::to_string(result.n_added) +
           (added.tokens_file.empty() ? "" : ", from " + added.tokens_file) + ")";
  });
  for (int32_t id = n_tokens; id < added.pad_to; ++id) {
    append_piece(model, padding_name(id, ids), PieceType::unused);
    ++result.n_padding;
  }
  result.model_proto = model.take();
  return result;
}

bool looks_like_control(std::string_view piece) {
  // The bracketed markers of the Llama 2 and Mistral formats (chat_template.cpp).
  static constexpr std::string_view kBracketMarkers[] = {"[INST]", "[/INST]", "<<SYS>>",
                                                         "<</SYS>>"};
  for (std::string_view marker : kBracketMarkers) {
    if (piece == marker) return true;
  }
  return piece.size() > 4 && piece.substr(0, 2) == "<|" && piece.substr(piece.size() - 2) == "|>";
}

ControlLookingPieces mark_control_looking_pieces(std::string_view model_proto) {
  ControlLookingPieces result;
  WireWriter model;
  WireReader reader(model_proto, "tokenizer model", "ModelProto");
  while (!reader.done()) {
    const size_t begin = reader.offset();
    const auto f = reader.next();
    const std::string_view encoded = reader.slice(begin, reader.offset());
    if (f.number != field::kModelPieces || f.wire_type != kWireLengthDelimited) {
      model.fields(encoded);
      continue;
    }
    PieceType type = PieceType::normal;  // the proto default
    std::string_view text;
    WireReader piece(f.bytes, "tokenizer model", "SentencePiece");
    while (!piece.done()) {
      const auto pf = piece.next();
      if (pf.number == field::kPieceType && pf.wire_type == kWireVarint) type = PieceType(pf.value);
      if (pf.number == field::kPiecePiece && pf.wire_type == kWireLengthDelimited) {
        text = pf.bytes;
      }
    }
    if (type != PieceType::user_defined || !looks_like_control(text)) {
      model.fields(encoded);
      continue;
    }
    // A scalar field written twice takes its last value: the type appended wins.
    WireWriter changed;
    changed.fields(f.bytes);
    changed.varint(field::kPieceType, uint64_t(PieceType::control));
    model.bytes(field::kModelPieces, changed.data());
    result.pieces.emplace_back(text);
  }
  result.model_proto = model.take();
  return result;
}

}  // namespace parley::text
