#include "text/tokenizer.h"

#include <sentencepiece_processor.h>

#include "common/add_unique.h"
#include "common/error.h"
#include "common/log.h"
#include "text/spm_model_proto.h"
#include "text/utf8_stream.h"

namespace parley::text {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, sentencepiece's space

std::string replace_space_symbols(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.substr(i, kSpaceSymbol.size()) == kSpaceSymbol) {
      out.push_back(' ');
      i += kSpaceSymbol.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

std::string describe_marked(const std::vector<std::string>& pieces) {
  std::string line = "tokenizer: " + std::to_string(pieces.size()) +
                     " user-defined piece(s) that look like control pieces are treated as "
                     "control (never matched in text):";
  constexpr size_t kNamed = 8;
  for (size_t i = 0; i < pieces.size() && i < kNamed; ++i) line += " " + pieces[i];
  if (pieces.size() > kNamed) line += " ...";
  return line;
}

// Where the pieces came from, for messages about ids outside them.
std::string describe_origin(const ExtendedModelProto& proto, const model::AddedPieces& added) {
  std::string origin = "tokenizer.model: " + std::to_string(proto.n_own) + " pieces";
  if (proto.n_added > 0) {
    origin += " + " + std::to_string(proto.n_added) + " added tokens (" + added.tokens_file + ")";
  }
  if (proto.n_padding > 0) {
    origin += " + " + std::to_string(proto.n_padding) + " padding pieces (up to " +
              added.pad_to_source + ")";
  }
  return origin;
}

}  // namespace

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
  // The same model without the dummy prefix; loaded only when `sp` adds one.
  sentencepiece::SentencePieceProcessor sp_continuing;
  std::vector<PieceType> types;         // [n_vocab]
  std::vector<std::string> piece_bytes;  // [n_vocab], see Tokenizer::piece_bytes
  int32_t bos = -1;
  int32_t eos = -1;
  std::vector<int32_t> end_ids;  // the EOS first
  int32_t space = -1;  // the piece that is one space (U+2581, else the byte 0x20); -1: none
  bool add_dummy_prefix = true;
  std::string origin;  // where the pieces came from, e.g. "tokenizer.model: 512 pieces"

  void load(std::string_view original) {
    ControlLookingPieces marked = mark_control_looking_pieces(original);
    if (!marked.pieces.empty()) log::warn_line(describe_marked(marked.pieces));
    const std::string& proto = marked.model_proto;
    const auto status = sp.LoadFromSerializedProto(proto);
    require(status.ok(), Status::bad_model,
            "sentencepiece cannot load the tokenizer model: " + status.ToString());
    SpmModelInfo info = read_spm_model_info(proto);
    require(info.piece_types.size() == size_t(sp.GetPieceSize()), Status::bad_model,
            "tokenizer model: piece count disagrees with sentencepiece's");
    types = std::move(info.piece_types);
    add_dummy_prefix = info.add_dummy_prefix;
    if (add_dummy_prefix) {
      const auto continuing = sp_continuing.LoadFromSerializedProto(without_dummy_prefix(proto));
      require(continuing.ok(), Status::bad_model,
              "sentencepiece cannot load the tokenizer model: " + continuing.ToString());
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool continuing) const {
    require(is_valid_utf8(text), Status::invalid_argument, "text to tokenize is not valid UTF-8");
    std::vector<int> ids;
    // Each member called by name binds to SentencePieceProcessor::Encode itself, not through
    // the vtable, which the out-of-memory tests' wrapper of it relies on.
    const auto status = continuing ? sp_continuing.Encode(text, &ids) : sp.Encode(text, &ids);
    require(status.ok(), Status::internal, "sentencepiece encode failed: " + status.ToString());
    return {ids.begin(), ids.end()};
  }

  std::string bytes_of(int32_t id) const {
    switch (types[size_t(id)]) {
      case PieceType::control: return "";
      case PieceType::unused: return "";  // padding rows: no file gives them text
      case PieceType::unknown: return sp.DecodeIds({id});  // the model's unk surface, " ⁇ "
      case PieceType::byte: {
        const auto byte = parse_byte_piece(sp.IdToPiece(id));
        return byte ? std::string(1, char(*byte)) : std::string();
      }
      default: return replace_space_symbols(sp.IdToPiece(id));
    }
  }

  // A special id that a model file names must be a control piece (user-defined chat markers
  // were made control at load): any other piece is matched in text, or streamed as text.
  int32_t require_control(const model::NamedTokenId& named) const {
    const int32_t n = sp.GetPieceSize();
    require(named.id >= 0 && named.id < n, Status::bad_model, [&] {
      return named.source + " " + std::to_string(named.id) + " is outside the vocabulary [0, " +
             std::to_string(n) + "): the tokenizer has " + std::to_string(n) + " pieces (" +
             origin + ")";
    });
    const PieceType type = types[size_t(named.id)];
    require(type == PieceType::control, Status::bad_model, [&] {
      return named.source + " names token " + std::to_string(named.id) + " ('" +
             sp.IdToPiece(named.id) + "') of type " + type_name(type) + "; it must be CONTROL";
    });
    return named.id;
  }

  void set_end_ids(const std::vector<model::NamedTokenId>& more) {
    end_ids = {eos};
    for (const model::NamedTokenId& named : more) add_unique(end_ids, require_control(named));
  }

  void check_id(int32_t id) const {
    require(id >= 0 && id < sp.GetPieceSize(), Status::invalid_argument, [&] {
      return "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(sp.GetPieceSize()) + ")";
    });
  }
};

Tokenizer::Tokenizer(const model::TokenizerSource& source) : impl_(std::make_unique<Impl>()) {
  if (source.kind == model::TokenizerSource::Kind::gguf_vocab) {
    const auto& vocab = source.vocab;
    require(vocab.model == "llama", Status::unsupported,
            "tokenizer.ggml.model '" + vocab.model +
                "' is not supported (only 'llama', a sentencepiece vocabulary)");
    validate_gguf_vocab(vocab);
    impl_->origin = "tokenizer.ggml.tokens";
    impl_->load(build_spm_model_proto(vocab));
    impl_->bos = vocab.bos_id;
    impl_->eos = vocab.eos_id;
  } else {
    const ExtendedModelProto proto = append_added_pieces(source.proto_bytes, source.added);
    impl_->origin = describe_origin(proto, source.added);
    impl_->load(proto.model_proto);
    // config.json's, else sentencepiece's, which it finds by piece name (<s>, </s> unless the
    // trainer spec says otherwise).
    impl_->bos = source.bos ? impl_->require_control(*source.bos) : impl_->sp.bos_id();
    impl_->eos = source.eos ? impl_->require_control(*source.eos) : impl_->sp.eos_id();
    require(impl_->bos >= 0, Status::bad_model, "the tokenizer model has no BOS control piece");
    require(impl_->eos >= 0, Status::bad_model, "the tokenizer model has no EOS control piece");
  }
  impl_->set_end_ids(source.more_end_ids);
  const int32_t n = impl_->sp.GetPieceSize();
  impl_->piece_bytes.reserve(size_t(n));
  for (int32_t id = 0; id < n; ++id) impl_->piece_bytes.push_back(impl_->bytes_of(id));
  for (int32_t id = 0; id < n; ++id) {
    const PieceType type = impl_->types[size_t(id)];
    if (impl_->piece_bytes[size_t(id)] != " " || type == PieceType::unused) continue;
    if (type == PieceType::byte && impl_->space >= 0) continue;
    impl_->space = id;
    if (type != PieceType::byte) break;
  }
}

Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  return impl_->encode(text, false);
}

std::vector<int32_t> Tokenizer::encode_continuation(std::string_view text) const {
  // The dummy prefix is the space a word after a space starts with; some normalizers also
  // drop leading spaces, so that space goes to the processor that adds it back. A lone space
  // has no word to start: it is the U+2581 piece itself.
  std::vector<int32_t> ids = !impl_->add_dummy_prefix               ? encode(text)
                             : text.size() > 1 && text.front() == ' ' ? encode(text.substr(1))
                                                                     : impl_->encode(text, true);
  return keep_trailing_spaces(text, std::move(ids));
}

std::vector<int32_t> Tokenizer::keep_trailing_spaces(std::string_view text,
                                                     std::vector<int32_t> ids) const {
  const size_t last = text.find_last_not_of(' ');
  const size_t wanted = last == std::string_view::npos ? text.size() : text.size() - last - 1;
  size_t held = 0;  // the spaces the ids end with
  for (auto id = ids.rbegin(); id != ids.rend(); ++id) {
    const std::string& piece = impl_->piece_bytes[size_t(*id)];
    const size_t piece_last = piece.find_last_not_of(' ');
    held += piece_last == std::string::npos ? piece.size() : piece.size() - piece_last - 1;
    if (piece_last != std::string::npos) break;
  }
  if (held < wanted && impl_->space >= 0) ids.insert(ids.end(), wanted - held, impl_->space);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  // Unused pieces (padding rows) have no text; sentencepiece's decoding would show their names.
  std::vector<int> shown;
  for (int32_t id : ids) {
    impl_->check_id(id);
    if (impl_->types[size_t(id)] != PieceType::unused) shown.push_back(id);
  }
  std::string text;
  const auto status = impl_->sp.Decode(shown, &text);
  require(status.ok(), Status::internal, "sentencepiece decode failed: " + status.ToString());
  // A NUL (<0x00>) would end the text for every C caller that reads it as a string.
  for (size_t at = text.find('\0'); at != std::string::npos; at = text.find('\0', at)) {
    text.replace(at, 1, kReplacementCharacter);
  }
  return text;
}

std::string Tokenizer::piece_bytes(int32_t id) const {
  impl_->check_id(id);
  return impl_->piece_bytes[size_t(id)];
}

std::optional<int32_t> Tokenizer::find_special(std::string_view piece) const {
  // PieceToId answers the unknown id for pieces it does not know; the type check rules that out.
  const int32_t id = impl_->sp.PieceToId(piece);
  if (id < 0 || id >= n_vocab() || impl_->sp.IdToPiece(id) != piece) return std::nullopt;
  const PieceType type = impl_->types[size_t(id)];
  if (type != PieceType::control && type != PieceType::user_defined) return std::nullopt;
  return id;
}

int32_t Tokenizer::n_vocab() const { return impl_->sp.GetPieceSize(); }
int32_t Tokenizer::bos_id() const { return impl_->bos; }
int32_t Tokenizer::eos_id() const { return impl_->eos; }
const std::vector<int32_t>& Tokenizer::end_ids() const { return impl_->end_ids; }

bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_vocab() && impl_->types[size_t(id)] == PieceType::control;
}

bool Tokenizer::is_unknown(int32_t id) const {
  return id >= 0 && id < n_vocab() && impl_->types[size_t(id)] == PieceType::unknown;
}

bool Tokenizer::adds_dummy_prefix() const { return impl_->add_dummy_prefix; }

}  // namespace parley::text
