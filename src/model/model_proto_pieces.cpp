#include "model/model_proto_pieces.h"

#include "common/error.h"
#include "common/protobuf_wire.h"

namespace parley::model {
namespace {

constexpr uint32_t kPiecesField = 1;

}  // namespace

std::optional<int32_t> count_model_proto_pieces(std::string_view model_proto) {
  int32_t pieces = 0;
  try {
    protobuf::WireReader reader(model_proto, "tokenizer model", "ModelProto");
    while (!reader.done()) {
      const auto f = reader.next();
      if (f.number == kPiecesField && f.wire_type == protobuf::kWireLengthDelimited) ++pieces;
    }
  } catch (const Error&) {
    return std::nullopt;  // the tokenizer names the fault when it reads these bytes
  }
  return pieces;
}

}  // namespace parley::model
