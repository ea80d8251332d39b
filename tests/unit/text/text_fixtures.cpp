#include "text_fixtures.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

#include "support/shared_assets.h"

namespace parley::test {

std::vector<TokenizeGolden> load_tokenize_goldens(const std::filesystem::path& jsonl) {
  std::ifstream in(jsonl);
  if (!in) throw std::runtime_error("cannot read " + jsonl.string());
  std::vector<TokenizeGolden> goldens;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    goldens.push_back({j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>(),
                       j.at("decoded").get<std::string>()});
  }
  return goldens;
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::filesystem::path& file) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->Load(file.string());
  if (!status.ok()) throw std::runtime_error("sentencepiece cannot load " + file.string());
  return sp;
}

model::TokenizerSource proto_source(const std::filesystem::path& model_file) {
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::sentencepiece_proto;
  source.proto_bytes = read_file(model_file);
  return source;
}

model::GgufVocab vocab_from_spm(const std::filesystem::path& model_file,
                                bool remove_extra_whitespaces) {
  const auto sp = load_spm(model_file);
  model::GgufVocab vocab;
  vocab.model = "llama";
  for (int id = 0; id < sp->GetPieceSize(); ++id) {
    vocab.tokens.push_back(sp->IdToPiece(id));
    vocab.scores.push_back(sp->GetScore(id));
    // This sentencepiece version has no IsUserDefined(); neither reference model has such pieces.
    int32_t type = 1;
    if (sp->IsUnknown(id)) type = 2;
    if (sp->IsControl(id)) type = 3;
    if (sp->IsUnused(id)) type = 5;
    if (sp->IsByte(id)) type = 6;
    vocab.token_types.push_back(type);
  }
  vocab.unk_id = sp->unk_id();
  vocab.bos_id = sp->bos_id();
  vocab.eos_id = sp->eos_id();
  vocab.pad_id = sp->pad_id();
  vocab.add_space_prefix = true;  // both reference models add the dummy prefix
  vocab.remove_extra_whitespaces = remove_extra_whitespaces;
  return vocab;
}

model::TokenizerSource vocab_source(model::GgufVocab vocab) {
  model::TokenizerSource source;
  source.kind = model::TokenizerSource::Kind::gguf_vocab;
  source.vocab = std::move(vocab);
  return source;
}

void append_pieces(model::GgufVocab& vocab, const std::vector<std::string>& pieces, int32_t type) {
  for (const auto& p : pieces) {
    vocab.tokens.push_back(p);
    vocab.scores.push_back(0.0f);
    vocab.token_types.push_back(type);
  }
}

void append_byte_pieces(model::GgufVocab& vocab) {
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    append_pieces(vocab, {std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">"}, 6);
  }
}

model::GgufVocab small_vocab(const std::vector<std::string>& pieces) {
  model::GgufVocab vocab;
  vocab.model = "llama";
  vocab.tokens = {"<unk>", "<s>", "</s>"};
  vocab.scores = {0.0f, 0.0f, 0.0f};
  vocab.token_types = {2, 3, 3};
  float score = -1.0f;
  for (const auto& p : pieces) {
    vocab.tokens.push_back(p);
    vocab.scores.push_back(score);
    vocab.token_types.push_back(1);
    score -= 1.0f;
  }
  vocab.unk_id = 0;
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  return vocab;
}

std::string escaped(std::string_view bytes) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(char(c));
    } else {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

}  // namespace parley::test
