// Fuzz entry point of the GGUF path: parse, then every check the loader makes (metadata,
// config, tensor shapes), then the tokenizer built from tokenizer.ggml.* and one encode and
// decode with it. Any input must end in a clean parley::Error or a usable model.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "model/gguf_metadata.h"
#include "model/gguf_reader.h"
#include "model/weights.h"
#include "text/tokenizer.h"

namespace {

using namespace parley;

// The loader's GGUF steps (model_loader.cpp), on bytes instead of a mapped file.
void check_model(const model::GgufFile& file, const model::GgufModelInfo& info) {
  info.config.validate();
  std::vector<model::FileTensor> tensors;
  for (const model::GgufTensorInfo& t : file.tensors) {
    model::FileTensor ft{t.name, t.dtype, {}, t.data.data(), t.data.size()};
    for (uint32_t d = t.n_dims; d-- > 0;) ft.shape.push_back(t.ne[d]);
    tensors.push_back(std::move(ft));
  }
  const model::Weights w =
      model::build_weights(tensors, model::TensorNaming::gguf, info.config, false);
  (void)model::count_parameters(w);
}

void check_tokenizer(const model::GgufVocab& vocab) {
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::gguf_vocab;
  source.vocab = vocab;
  const text::Tokenizer tok(source);
  const std::vector<int32_t> ids = tok.encode("Hello, world! \xC3\xA9\xE2\x82\xAC 123");
  (void)tok.decode(ids);
  for (int32_t id = 0; id < tok.n_vocab() && id < 512; ++id) (void)tok.piece_bytes(id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  model::GgufFile file;
  model::GgufModelInfo info;
  try {
    file = model::parse_gguf(bytes);
    info = model::read_gguf_metadata(file);
  } catch (const Error&) {
    return 0;
  }
  try {
    check_model(file, info);
  } catch (const Error&) {
  }
  try {
    check_tokenizer(info.vocab);
  } catch (const Error&) {
  }
  return 0;
}
