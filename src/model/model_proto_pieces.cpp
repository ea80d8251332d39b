#include "model/model_proto_pieces.h"

#include <cstddef>

namespace parley::model {
namespace {

constexpr uint64_t kPiecesField = 1;

bool read_varint(std::string_view bytes, size_t& at, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= bytes.size()) return false;
    const auto b = static_cast<uint8_t>(bytes[at++]);
    value |= uint64_t(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

bool skip(std::string_view bytes, size_t& at, uint64_t n) {
  if (n > bytes.size() - at) return false;
  at += size_t(n);
  return true;
}

}  // namespace

std::optional<int32_t> count_model_proto_pieces(std::string_view model_proto) {
  int32_t pieces = 0;
  size_t at = 0;
  while (at < model_proto.size()) {
    uint64_t tag = 0;
    uint64_t value = 0;
    if (!read_varint(model_proto, at, tag)) return std::nullopt;
    bool ok = false;
    switch (tag & 7) {  // the wire type
      case 0:
        ok = read_varint(model_proto, at, value);
        break;
      case 1:
        ok = skip(model_proto, at, 8);
        break;
      case 2:
        ok = read_varint(model_proto, at, value) && skip(model_proto, at, value);
        break;
      case 5:
        ok = skip(model_proto, at, 4);
        break;
      default:
        break;
    }
    if (!ok) return std::nullopt;
    if ((tag >> 3) == kPiecesField && (tag & 7) == 2) ++pieces;
  }
  return pieces;
}

}  // namespace parley::model
