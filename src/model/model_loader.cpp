#include "model/model_loader.h"

#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "common/memory_room.h"
#include "common/utf8_sequence.h"
#include "model/fingerprint.h"
#include "model/gguf_metadata.h"
#include "model/gguf_reader.h"
#include "model/hf_added_tokens.h"
#include "model/hf_config.h"
#include "model/model_proto_pieces.h"
#include "model/safetensors_reader.h"
#include "model/text_file.h"
#include "model/weight_release.h"

namespace parley::model {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxJsonBytes = 16u * 1000u * 1000u;
constexpr size_t kMaxTokenizerModelBytes = 64u * 1000u * 1000u;

void drop_source_pages(const LoadedModel& m, const FileTensor& t) {
  TensorView source;
  source.name = t.name;
  source.data = t.data;
  source.n_bytes = t.n_bytes;
  drop_file_pages(m, source);
}

// Tensors rewritten at load (q/k rows un-permuted, norms converted, tensors realigned) were
// read from the file into buffers of their own; their file pages are not needed again.
void drop_rewritten_sources(const std::vector<FileTensor>& tensors, const LoadedModel& m) {
  std::unordered_set<const std::byte*> in_use;
  for (const TensorView* v : weight_views(m.weights)) in_use.insert(v->data);
  for (const FileTensor& t : tensors) {
    if (!in_use.count(t.data)) drop_source_pages(m, t);
  }
}

// The memory the tensors of ggml blocks take once converted (the process's own, unlike the
// file's pages), asked for before any is converted.
void require_room_for_conversion(const std::vector<FileTensor>& tensors) {
  uint64_t held = 0;
  for (const FileTensor& t : tensors) {
    if (!t.blocks || t.shape.empty()) continue;
    uint64_t rows = 1;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= uint64_t(t.shape[d]);
    held += rows * row_bytes(t.blocks->held, size_t(t.shape.back()));
  }
  if (held > 0) require_memory_room(held, "converting the model's 4- to 6-bit weights");
}

// Converting a tensor of ggml blocks reads its bytes and writes a larger copy; the backend
// then reads every weight again. The conversion's share of the opening follows that.
void begin_conversion_stage(const std::vector<FileTensor>& tensors, LoadProgress& progress) {
  uint64_t converted = 0, all = 0;
  for (const FileTensor& t : tensors) {
    all += t.n_bytes;
    if (t.blocks) converted += t.n_bytes;
  }
  const uint64_t whole = converted + all;
  progress.begin_stage(converted, whole ? double(converted) / double(whole) : 0.0);
}

void load_gguf(const GgufFile& file, LoadedModel& m, LoadProgress& progress) {
  GgufModelInfo info = read_gguf_metadata(file);
  m.config = std::move(info.config);
  m.config.validate();
  std::vector<FileTensor> tensors;
  tensors.reserve(file.tensors.size());
  for (const GgufTensorInfo& t : file.tensors) {
    FileTensor ft{t.name, t.dtype, {}, t.data.data(), t.data.size(), t.blocks};
    for (uint32_t d = t.n_dims; d-- > 0;) ft.shape.push_back(t.ne[d]);  // ne is innermost first
    tensors.push_back(std::move(ft));
  }
  // A tensor of ggml blocks leaves its file pages as soon as it is converted, so that the
  // process never holds the file and the converted model at once.
  require_room_for_conversion(tensors);
  begin_conversion_stage(tensors, progress);
  m.weights = build_weights(tensors, TensorNaming::gguf, m.config, /*tie_output=*/false,
                            [&](const FileTensor& t) {
                              drop_source_pages(m, t);
                              progress.advance(t.n_bytes);
                            });
  drop_rewritten_sources(tensors, m);
  m.tokenizer.kind = TokenizerSource::Kind::gguf_vocab;
  m.tokenizer.vocab = std::move(info.vocab);
  m.tokenizer.more_end_ids = std::move(info.more_end_ids);
}

std::string optional_text_file(const fs::path& path) {
  return read_optional_text_file(path, kMaxJsonBytes);
}

// An added token past the embedding's rows has no row to be read from or written with: as
// llama.cpp's converter does, it is left out (repositories that add "<pad>" at vocab_size).
void drop_tokens_past_the_vocabulary(AddedPieces& added) {
  std::erase_if(added.tokens, [&](const AddedToken& t) {
    if (t.id < added.pad_to) return false;
    log::warn_line(added.tokens_file + ": added token " + std::to_string(t.id) +
                   " is past the model's vocabulary (" + added.pad_to_source + " " +
                   std::to_string(added.pad_to) + "): left out");
    return true;
  });
}

// config.json's BOS and EOS replace the tokenizer.model's; the EOS list's other ids and
// generation_config.json's also end a reply, as transformers' generate() stops on them.
void set_special_ids(const HfConfig& hf, const fs::path& dir, TokenizerSource& tokenizer) {
  const std::string config_eos = "config.json: eos_token_id";
  if (hf.bos_id) tokenizer.bos = NamedTokenId{*hf.bos_id, "config.json: bos_token_id"};
  if (!hf.eos_ids.empty()) tokenizer.eos = NamedTokenId{hf.eos_ids.front(), config_eos};
  for (size_t i = 1; i < hf.eos_ids.size(); ++i) {
    tokenizer.more_end_ids.push_back({hf.eos_ids[i], config_eos});
  }
  const std::string generation = optional_text_file(dir / "generation_config.json");
  if (generation.empty()) return;
  for (int32_t id : parse_generation_eos_ids(generation)) {
    tokenizer.more_end_ids.push_back({id, "generation_config.json: eos_token_id"});
  }
}

// The directory's own name, also when it is given as ".", "./" or "models/x/..": the last
// component of its absolute path, made normal (the path as given if the working directory
// cannot be read).
std::string directory_name(const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) p = dir;
  p = p.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "models/x/" -> "models/x"
  return p.filename().string();
}

// transformers' save_pretrained writes the chat template to chat_template.jinja rather than
// into tokenizer_config.json, and reads the file first where both have one. An empty file
// leaves tokenizer_config.json's.
void read_chat_template_file(const fs::path& dir, ModelConfig& config) {
  const fs::path path = dir / "chat_template.jinja";
  std::string text = optional_text_file(path);
  if (text.empty()) return;
  if (!is_valid_utf8(text)) fail(Status::bad_model, "'" + path.string() + "' is not valid UTF-8");
  config.chat_template = std::move(text);
}

void load_hf(const fs::path& dir, LoadedModel& m) {
  const fs::path config_path = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(config_path, ec)) {
    fail(Status::bad_model,
         "'" + dir.string() + "' is not a Hugging Face model directory: config.json missing");
  }
  const std::string tok_config = optional_text_file(dir / "tokenizer_config.json");
  HfConfig hf =
      parse_hf_config(read_text_file(config_path, kMaxJsonBytes), tok_config, directory_name(dir));
  read_chat_template_file(dir, hf.config);
  m.config = std::move(hf.config);
  m.config.validate();

  const fs::path tokenizer_path = dir / "tokenizer.model";
  if (!fs::exists(tokenizer_path, ec)) {
    fail(Status::bad_model, "tokenizer.model missing: only sentencepiece tokenizers are supported");
  }
  m.tokenizer.kind = TokenizerSource::Kind::sentencepiece_proto;
  m.tokenizer.proto_bytes = read_text_file(tokenizer_path, kMaxTokenizerModelBytes);
  // The tokenizer appends the added tokens to tokenizer.model's pieces, and pads them to the
  // embedding's rows, so that every id the model can write has a piece.
  m.tokenizer.added = read_added_tokens(dir, tok_config);
  m.tokenizer.added.pad_to = m.config.n_vocab;
  m.tokenizer.added.pad_to_source = "config.json: vocab_size";
  m.tokenizer.added.n_own_pieces = count_model_proto_pieces(m.tokenizer.proto_bytes).value_or(0);
  drop_tokens_past_the_vocabulary(m.tokenizer.added);
  set_special_ids(hf, dir, m.tokenizer);

  std::vector<FileTensor> tensors;
  for (SafetensorsTensor& t : read_safetensors_dir(dir, m.files)) {
    tensors.push_back(
        FileTensor{std::move(t.name), t.dtype, std::move(t.shape), t.data.data(), t.data.size()});
  }
  m.weights = build_weights(tensors, TensorNaming::hugging_face, m.config, hf.tie_word_embeddings);
  drop_rewritten_sources(tensors, m);
}

}  // namespace

std::unique_ptr<LoadedModel> load_model(const std::string& path, LoadProgress* progress) {
  LoadProgress silent;
  LoadProgress& reports = progress ? *progress : silent;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) fail(Status::not_found, "model path '" + path + "' does not exist");
  auto m = std::make_unique<LoadedModel>();
  if (fs::is_directory(st)) {
    load_hf(path, *m);
  } else {
    m->files.push_back(std::make_shared<MappedFile>(path));
    const auto bytes = m->files.back()->bytes();
    if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0) {
      fail(Status::bad_model, "'" + path + "' is not a GGUF file or a Hugging Face directory");
    }
    load_gguf(parse_gguf(bytes), *m, reports);
  }
  m->n_params = count_parameters(m->weights);
  m->fingerprint = model_fingerprint(m->config, m->tokenizer, m->weights);
  return m;
}

}  // namespace parley::model
