// The tokens a Hugging Face directory adds to its tokenizer.model (a ChatML fine-tune's
// <|im_end|> and <|im_start|>) reach the tokenizer, from whichever file lists them.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/hf_added_tokens.h"
#include "model/model_loader.h"
#include "support/error_check.h"
#include "support/log_capture.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using parley::Status;
using parley::model::AddedPieces;
using parley::model::load_model;
using parley::test::SynthSpec;

namespace {

// A ChatML fine-tune of a 318-piece tokenizer.model: two added rows in the embedding.
constexpr int32_t kOwnPieces = 318;
constexpr int32_t kImEnd = 318, kImStart = 319;

const char* const kAddedTokensDecoder = R"({"added_tokens_decoder": {
  "0": {"content": "<unk>", "special": true},
  "318": {"content": "<|im_end|>", "special": true, "lstrip": false, "normalized": false},
  "319": {"content": "<|im_start|>", "special": true}}})";

const char* const kTokenizerJson = R"({"version": "1.0", "added_tokens": [
  {"id": 318, "content": "<|im_end|>", "special": true},
  {"id": 319, "content": "<|im_start|>", "special": false}], "model": {"type": "BPE"}})";

const char* const kAddedTokensJson = R"({"<|im_start|>": 319, "<|im_end|>": 318})";

// The tokens as (id, content, special), in the order the loader hands them on.
using Listed = std::vector<std::tuple<int32_t, std::string, bool>>;
Listed listed(const AddedPieces& added) {
  Listed out;
  for (const auto& t : added.tokens) out.emplace_back(t.id, t.content, t.special);
  return out;
}

// A synthetic model directory of 320 embedding rows with `files` (name, text) beside it.
std::string hf_dir(const parley::test::TempDir& tmp, const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& files) {
  SynthSpec spec;
  spec.n_vocab = kOwnPieces + 2;
  parley::test::write_bytes(tmp / "tok.model", "x");  // the loader passes it on unread
  const auto dir = tmp / name;
  parley::test::write_hf_dir(spec, parley::test::make_synth_weights(spec), dir, tmp / "tok.model");
  for (const auto& [file, text] : files) parley::test::write_bytes(dir / file, text);
  return dir.string();
}

}  // namespace

TEST_CASE("loader: tokenizer_config.json's added_tokens_decoder goes to the tokenizer") {
  parley::test::TempDir tmp;
  const auto m = load_model(hf_dir(tmp, "m",
                                   {{"tokenizer_config.json", kAddedTokensDecoder},
                                    {"tokenizer.json", kTokenizerJson},
                                    {"added_tokens.json", kAddedTokensJson}}));
  const AddedPieces& added = m->tokenizer.added;
  CHECK(listed(added) ==
        Listed{{0, "<unk>", true}, {kImEnd, "<|im_end|>", true}, {kImStart, "<|im_start|>", true}});
  CHECK(added.tokens_file == "tokenizer_config.json");
  // Pieces are padded up to the embedding's rows.
  CHECK(added.pad_to == kOwnPieces + 2);
  CHECK(added.pad_to_source == "config.json: vocab_size");
}

TEST_CASE("loader: without added_tokens_decoder, tokenizer.json's added_tokens apply") {
  parley::test::TempDir tmp;
  const auto m = load_model(hf_dir(
      tmp, "m", {{"tokenizer.json", kTokenizerJson}, {"added_tokens.json", kAddedTokensJson}}));
  CHECK(listed(m->tokenizer.added) ==
        Listed{{kImEnd, "<|im_end|>", true}, {kImStart, "<|im_start|>", false}});
  CHECK(m->tokenizer.added.tokens_file == "tokenizer.json");
}

TEST_CASE("loader: added_tokens.json alone: special when special_tokens_map.json names them") {
  parley::test::TempDir tmp;
  const auto bare = load_model(hf_dir(tmp, "bare", {{"added_tokens.json", kAddedTokensJson}}));
  CHECK(listed(bare->tokenizer.added) ==
        Listed{{kImEnd, "<|im_end|>", false}, {kImStart, "<|im_start|>", false}});
  CHECK(bare->tokenizer.added.tokens_file == "added_tokens.json");

  const auto mapped =
      load_model(hf_dir(tmp, "mapped",
                        {{"added_tokens.json", kAddedTokensJson},
                         {"special_tokens_map.json",
                          R"({"eos_token": {"content": "<|im_end|>"}, "bos_token": "<s>",
                   "additional_special_tokens": ["<|im_start|>"]})"}}));
  CHECK(listed(mapped->tokenizer.added) ==
        Listed{{kImEnd, "<|im_end|>", true}, {kImStart, "<|im_start|>", true}});
}

TEST_CASE("loader: a directory without added tokens still pads to its embedding's rows") {
  parley::test::TempDir tmp;
  const auto m = load_model(hf_dir(tmp, "m", {}));
  CHECK(m->tokenizer.added.tokens.empty());
  CHECK(m->tokenizer.added.pad_to == kOwnPieces + 2);
  CHECK(m->tokenizer.proto_bytes == "x");
}

TEST_CASE("loader: malformed added-token files are bad_model naming the file") {
  parley::test::TempDir tmp;
  CHECK_PARLEY_ERROR(load_model(hf_dir(tmp, "a",
                                       {{"tokenizer_config.json",
                                         R"({"added_tokens_decoder": {"x": {"content": "a"}}})"}})),
                     Status::bad_model, "tokenizer_config.json", "'x' is not a token id");
  CHECK_PARLEY_ERROR(
      load_model(hf_dir(
          tmp, "b",
          {{"tokenizer_config.json", R"({"added_tokens_decoder": {"318": {"special": true}}})"}})),
      Status::bad_model, "tokenizer_config.json", "added_tokens_decoder[\"318\"]", "content");
  CHECK_PARLEY_ERROR(load_model(hf_dir(tmp, "c", {{"tokenizer.json", R"({"added_tokens": [{"id": -1,
                                    "content": "a"}]})"}})),
                     Status::bad_model, "tokenizer.json",
                     "added_tokens[0] id -1 is not a token id");
  CHECK_PARLEY_ERROR(load_model(hf_dir(tmp, "d", {{"added_tokens.json", "[318]"}})),
                     Status::bad_model, "added_tokens.json: not a JSON object");
  CHECK_PARLEY_ERROR(
      load_model(hf_dir(tmp, "e", {{"added_tokens.json", R"({"<|im_end|>": "318"})"}})),
      Status::bad_model, "added_tokens.json", "'<|im_end|>' id \"318\" is not a token id");
}

TEST_CASE("loader: an added token past vocab_size has no row: it is left out, with a warning") {
  parley::test::TempDir tmp;
  parley::test::LogCapture log;
  const auto m =
      load_model(hf_dir(tmp, "m", {{"added_tokens.json", R"({"<|im_end|>": 318, "<|im_start|>": 319,
                                           "<pad>": 320})"}}));
  CHECK(listed(m->tokenizer.added) ==
        Listed{{kImEnd, "<|im_end|>", false}, {kImStart, "<|im_start|>", false}});
  CHECK(log.count("added token 320 is past the model's vocabulary") == 1);
}

TEST_CASE("loader: an empty optional file is as absent; a deep one is refused, not recursed") {
  parley::test::TempDir tmp;
  for (const char* file : {"tokenizer_config.json", "generation_config.json", "tokenizer.json",
                           "added_tokens.json", "special_tokens_map.json"}) {
    CAPTURE(file);
    const auto m = load_model(hf_dir(tmp, file, {{file, ""}}));
    CHECK(m->tokenizer.added.tokens.empty());
  }
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK_PARLEY_ERROR(
      load_model(hf_dir(tmp, "deep-id", {{"added_tokens.json", R"({"<x>": )" + deep + "}"}})),
      Status::bad_model, "an array");
  const auto m = load_model(
      hf_dir(tmp, "deep-map",
             {{"added_tokens.json", kAddedTokensJson},
              {"special_tokens_map.json", R"({"additional_special_tokens": )" + deep + "}"}}));
  CHECK(m->tokenizer.added.tokens.size() == 2);
}

TEST_CASE("loader: an optional tokenizer file holding no JSON is left out, warned of") {
  parley::test::TempDir tmp;
  const std::string lfs_pointer =
      "version https://git-lfs.github.com/spec/v1\noid sha256:0123\nsize 1842767\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tokenizer.json", lfs_pointer}, {"tokenizer.json", "\n"},
      {"special_tokens_map.json", "not json"}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [file, text] = cases[i];
    CAPTURE(file);
    CAPTURE(text);
    parley::test::LogCapture log;
    const auto m = load_model(hf_dir(tmp, "m" + std::to_string(i),
                                     {{file, text}, {"added_tokens.json", kAddedTokensJson}}));
    CHECK(listed(m->tokenizer.added) ==
          Listed{{kImEnd, "<|im_end|>", false}, {kImStart, "<|im_start|>", false}});
    CHECK(log.count("left out") == (text == "\n" ? 0 : 1));
  }
  // JSON that is malformed inside is still refused.
  CHECK_PARLEY_ERROR(load_model(hf_dir(tmp, "bad-json", {{"tokenizer.json", "{\"added"}})),
                     Status::bad_model, "tokenizer.json");
}
