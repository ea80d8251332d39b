#include "model/dtype.h"

namespace parley::model {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::q8_0: return "Q8_0";
  }
  return "?";
}

}  // namespace parley::model
