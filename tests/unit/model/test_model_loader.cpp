#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "support/error_check.h"
#include "model/gguf_metadata.h"
#include "model/gguf_reader.h"
#include "model/model_loader.h"
#include "model/safetensors_reader.h"
#include "model_views.h"
#include "support/gguf_builder.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"
#include "support/tensor_codec.h"

using parley::Status;
using parley::model::DType;
using parley::model::load_model;
using parley::model::LoadedModel;
using parley::model::TensorView;
using parley::model::TokenizerSource;
using parley::test::all_views;
using parley::test::SynthSpec;

namespace {

std::optional<std::string> stories(const std::string& relative) {
  const auto p = parley::test::shared_file("models/stories260k/" + relative);
  if (!p) return std::nullopt;
  return p->string();
}

parley::test::HfDirOptions hf_options(std::string config_patch,
                                      std::string generation_config = "") {
  parley::test::HfDirOptions options;
  options.config_patch = std::move(config_patch);
  options.generation_config = std::move(generation_config);
  return options;
}

// shared/models/README.md section 2.
void check_stories_hyperparameters(const LoadedModel& m) {
  const auto& c = m.config;
  CHECK(c.architecture == "llama");
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.n_layers == 5);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.head_dim == 8);
  CHECK(c.n_vocab == 512);
  CHECK(c.context_length == 512);
  CHECK(c.rms_eps == 1e-5f);
  CHECK(c.rope_theta == 10000.0f);
  CHECK(c.sliding_window == 0);
  CHECK(c.unk_id == 0);
  CHECK(c.bos_id == 1);
  CHECK(c.eos_id == 2);
  CHECK(c.add_bos);
  CHECK(m.n_params == 260032);
  CHECK(m.weights.tied_output);
  CHECK(m.weights.output.data == m.weights.tok_embd.data);
}

bool same_bytes(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.rows == b.rows && a.cols == b.cols && a.n_bytes == b.n_bytes &&
         std::memcmp(a.data, b.data, a.n_bytes) == 0;
}

std::string bytes_of(const TensorView& v) {
  return std::string(reinterpret_cast<const char*>(v.data), v.n_bytes);
}

bool is_norm(const std::string& role) { return role.find("norm") != std::string::npos; }

}  // namespace

TEST_CASE("loader: stories260K GGUF files load with the documented hyperparameters and types") {
  for (const char* file :
       {"stories260k-f32.gguf", "stories260k-f16.gguf", "stories260k-q8_0.gguf"}) {
    CAPTURE(file);
    const auto path = stories(file);
    if (!path) return;
    const auto m = load_model(*path);
    check_stories_hyperparameters(*m);
    CHECK(m->tokenizer.kind == TokenizerSource::Kind::gguf_vocab);
    for (const auto& [role, view] : all_views(m->weights)) {
      CAPTURE(role);
      DType want = DType::f32;
      if (!is_norm(role) && std::string(file) == "stories260k-f16.gguf") want = DType::f16;
      if (!is_norm(role) && std::string(file) == "stories260k-q8_0.gguf") {
        want = role.ends_with("w_down") ? DType::f16
                                        : DType::q8_0;  // rows of 172 do not split into 32s
      }
      CHECK(view->dtype == want);
    }
  }
}

TEST_CASE("loader: the stories260K GGUF vocabulary") {
  const auto path = stories("stories260k-f32.gguf");
  if (!path) return;
  const auto m = load_model(*path);
  const auto& v = m->tokenizer.vocab;
  CHECK(v.model == "llama");
  REQUIRE(v.tokens.size() == 512);
  REQUIRE(v.scores.size() == 512);
  REQUIRE(v.token_types.size() == 512);
  CHECK(v.tokens[0] == "<unk>");
  CHECK(v.tokens[1] == "<s>");
  CHECK(v.tokens[2] == "</s>");
  CHECK(v.tokens[3] == "<0x00>");
  CHECK(v.tokens[258] == "<0xFF>");
  CHECK(v.token_types[0] == 2);
  CHECK(v.token_types[1] == 3);
  CHECK(v.token_types[2] == 3);
  for (int i = 3; i <= 258; ++i) CHECK(v.token_types[size_t(i)] == 6);
  for (int i = 259; i < 512; ++i) CHECK(v.token_types[size_t(i)] == 1);
  CHECK(v.bos_id == 1);
  CHECK(v.eos_id == 2);
  CHECK(v.unk_id == 0);
  CHECK(v.add_space_prefix);
  CHECK(v.remove_extra_whitespaces);
}

TEST_CASE("loader: the stories260K Hugging Face directory") {
  const auto dir = stories("hf");
  const auto tok = stories("hf/tokenizer.model");
  if (!dir || !tok) return;
  const auto m = load_model(*dir);
  check_stories_hyperparameters(*m);
  CHECK(m->config.name == "hf");
  CHECK(load_model(*dir + "/")->config.name == "hf");
  CHECK(m->tokenizer.kind == TokenizerSource::Kind::sentencepiece_proto);
  CHECK(m->tokenizer.proto_bytes == parley::test::read_file(*tok));
  for (const auto& [role, view] : all_views(m->weights)) CHECK(view->dtype == DType::f32);
}

TEST_CASE(
    "loader: HF q/k rows after un-permutation equal the F32 GGUF bit for bit, as do all others") {
  const auto dir = stories("hf");
  const auto gguf = stories("stories260k-f32.gguf");
  if (!dir || !gguf) return;
  const auto hf = load_model(*dir);
  const auto gg = load_model(*gguf);
  const auto a = all_views(hf->weights), b = all_views(gg->weights);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].first);
    CHECK(same_bytes(*a[i].second, *b[i].second));
  }
  // The check is not vacuous: the rows as stored in the HF file differ from the GGUF ones.
  const std::string st = parley::test::read_file(*dir + "/model.safetensors");
  const auto file =
      parley::model::parse_safetensors(parley::test::as_span(st), "model.safetensors");
  for (const auto& t : file.tensors) {
    if (t.name != "model.layers.0.self_attn.q_proj.weight") continue;
    REQUIRE(t.data.size() == gg->weights.layers[0].wq.n_bytes);
    CHECK(std::memcmp(t.data.data(), gg->weights.layers[0].wq.data, t.data.size()) != 0);
  }
}

TEST_CASE(
    "loader: the F16 and Q8_0 GGUF tensors are the F32 weights encoded as ggml encodes them") {
  const auto f32 = stories("stories260k-f32.gguf");
  const auto f16 = stories("stories260k-f16.gguf");
  const auto q8 = stories("stories260k-q8_0.gguf");
  if (!f32 || !f16 || !q8) return;
  const auto m32 = load_model(*f32), m16 = load_model(*f16), mq8 = load_model(*q8);
  const auto v32 = all_views(m32->weights), v16 = all_views(m16->weights),
             vq8 = all_views(mq8->weights);
  for (size_t i = 0; i < v32.size(); ++i) {
    CAPTURE(v32[i].first);
    const std::vector<float> values = parley::test::decode_view(*v32[i].second);
    CHECK(bytes_of(*v16[i].second) == parley::test::encode_tensor(v16[i].second->dtype, values));
    CHECK(bytes_of(*vq8[i].second) == parley::test::encode_tensor(vq8[i].second->dtype, values));
  }
}

TEST_CASE("loader: fingerprints are stable per file and differ between files") {
  const auto f32 = stories("stories260k-f32.gguf");
  const auto f16 = stories("stories260k-f16.gguf");
  const auto hf = stories("hf");
  if (!f32 || !f16 || !hf) return;
  const uint64_t a = load_model(*f32)->fingerprint;
  CHECK(a != 0);
  CHECK(load_model(*f32)->fingerprint == a);
  CHECK(load_model(*f16)->fingerprint != a);
  CHECK(load_model(*hf)->fingerprint == load_model(*hf)->fingerprint);
}

namespace {

// Loads spec's weights written by the synthetic writer and compares every tensor with what
// the writer's encoding gives back.
void check_round_trip(const LoadedModel& m, const SynthSpec& spec,
                      const parley::test::SynthWeights& w, bool gguf) {
  const auto& c = m.config;
  CHECK(c.dim == spec.dim);
  CHECK(c.hidden_dim == spec.hidden_dim);
  CHECK(c.n_layers == spec.n_layers);
  CHECK(c.n_heads == spec.n_heads);
  CHECK(c.n_kv_heads == spec.n_kv_heads);
  CHECK(c.head_dim == spec.hd());
  CHECK(c.n_vocab == spec.n_vocab);
  CHECK(c.context_length == spec.context_length);
  CHECK(c.rope_theta == spec.rope_theta);
  CHECK(c.rms_eps == spec.rms_eps);
  CHECK(m.weights.tied_output == spec.tied);
  auto expect = [&](const TensorView& v, const std::vector<float>& values, bool norm) {
    const DType dt = norm   ? DType::f32
                     : gguf ? parley::test::synth_matrix_dtype(spec, v.cols)
                            : spec.dtype;
    CHECK(v.dtype == dt);
    CHECK(parley::test::decode_view(v) == parley::test::round_trip(dt, values));
  };
  expect(m.weights.tok_embd, w.tok_embd, false);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    CAPTURE(l);
    const auto& L = m.weights.layers[l];
    const auto& E = w.layers[l];
    expect(L.attn_norm, E.attn_norm, true);
    expect(L.wq, E.wq, false);
    expect(L.wk, E.wk, false);
    expect(L.wv, E.wv, false);
    expect(L.wo, E.wo, false);
    expect(L.ffn_norm, E.ffn_norm, true);
    expect(L.w_gate, E.w_gate, false);
    expect(L.w_up, E.w_up, false);
    expect(L.w_down, E.w_down, false);
  }
  expect(m.weights.output_norm, w.output_norm, true);
  expect(m.weights.output, spec.tied ? w.tok_embd : w.output, false);
}

std::vector<SynthSpec> shapes() {
  std::vector<SynthSpec> out;
  SynthSpec mha;
  mha.n_heads = mha.n_kv_heads = 4;
  out.push_back(mha);
  SynthSpec gqa;  // 4 query heads per KV head, untied
  gqa.n_heads = 8;
  gqa.n_kv_heads = 2;
  out.push_back(gqa);
  SynthSpec mqa;  // one KV head, tied output, head_dim 32 given explicitly (not dim / heads)
  mqa.n_heads = 4;
  mqa.n_kv_heads = 1;
  mqa.head_dim = 32;
  mqa.tied = true;
  mqa.seed = 3;
  out.push_back(mqa);
  return out;
}

}  // namespace

TEST_CASE("loader: synthetic GGUF files round-trip for every type and attention shape") {
  parley::test::TempDir dir;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
    for (SynthSpec spec : shapes()) {
      spec.dtype = dtype;
      CAPTURE(int(dtype));
      CAPTURE(spec.n_kv_heads);
      const auto w = parley::test::make_synth_weights(spec);
      auto vocab = parley::test::make_spm_vocab(spec.n_vocab);
      vocab.chat_template = "{{ x }}";
      vocab.add_space_prefix = false;
      const auto path = dir / "m.gguf";
      parley::test::write_gguf(spec, w, vocab, path);
      const auto m = load_model(path.string());
      check_round_trip(*m, spec, w, true);
      CHECK(m->config.name == "synthetic");
      CHECK(m->config.chat_template == "{{ x }}");
      CHECK(m->tokenizer.vocab.tokens == vocab.tokens);
      CHECK(m->tokenizer.vocab.scores == vocab.scores);
      CHECK(m->tokenizer.vocab.token_types == vocab.types);
      CHECK_FALSE(m->tokenizer.vocab.add_space_prefix);
    }
  }
}

TEST_CASE("loader: synthetic Hugging Face directories round-trip, single file and sharded") {
  parley::test::TempDir tmp;
  const auto tokenizer = tmp / "tokenizer.model";
  parley::test::write_bytes(tokenizer,
                            std::string("\x0a\x05piece", 7));  // bytes are passed through
  int n = 0;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (int shards : {1, 3}) {
      for (SynthSpec spec : shapes()) {
        spec.dtype = dtype;
        CAPTURE(int(dtype));
        CAPTURE(shards);
        CAPTURE(spec.n_kv_heads);
        const auto w = parley::test::make_synth_weights(spec);
        const auto dir = tmp / ("model" + std::to_string(n++));
        parley::test::write_hf_dir(spec, w, dir, tokenizer,
                                   {.n_shards = shards, .chat_template = "T"});
        CHECK(std::filesystem::exists(dir / "model.safetensors.index.json") == (shards > 1));
        const auto m = load_model(dir.string());
        check_round_trip(*m, spec, w, false);
        CHECK(m->config.chat_template == "T");
        CHECK(m->tokenizer.proto_bytes == std::string("\x0a\x05piece", 7));
        if (shards > 1) CHECK(m->files.size() == size_t(shards));
      }
    }
  }
}

TEST_CASE("loader: the same weights as GGUF and as a Hugging Face directory load identically") {
  parley::test::TempDir tmp;
  parley::test::write_bytes(tmp / "tok.model", "x");
  for (const SynthSpec& spec : shapes()) {
    const auto w = parley::test::make_synth_weights(spec);
    parley::test::write_gguf(spec, w, parley::test::make_spm_vocab(spec.n_vocab), tmp / "m.gguf");
    parley::test::write_hf_dir(spec, w, tmp / "hf", tmp / "tok.model");
    const auto a = load_model((tmp / "m.gguf").string());
    const auto b = load_model((tmp / "hf").string());
    const auto va = all_views(a->weights), vb = all_views(b->weights);
    for (size_t i = 0; i < va.size(); ++i) {
      CAPTURE(va[i].first);
      CHECK(same_bytes(*va[i].second, *vb[i].second));
    }
    CHECK(a->n_params == b->n_params);
  }
}

TEST_CASE("loader: a Hugging Face directory's BOS, EOS and other end ids go to the tokenizer") {
  parley::test::TempDir tmp;
  parley::test::write_bytes(tmp / "tok.model", "x");
  SynthSpec spec;
  const auto w = parley::test::make_synth_weights(spec);
  parley::test::write_hf_dir(spec, w, tmp / "plain", tmp / "tok.model");
  parley::test::write_hf_dir(spec, w, tmp / "listed", tmp / "tok.model",
                             hf_options(R"({"bos_token_id": 3, "eos_token_id": [300, 2, 301]})",
                                        R"({"bos_token_id": 3, "eos_token_id": [302, 300]})"));
  const auto plain = load_model((tmp / "plain").string());
  const auto listed = load_model((tmp / "listed").string());

  REQUIRE(plain->tokenizer.bos.has_value());
  CHECK(plain->tokenizer.bos->id == 1);
  REQUIRE(plain->tokenizer.eos.has_value());
  CHECK(plain->tokenizer.eos->id == 2);
  CHECK(plain->tokenizer.more_end_ids.empty());

  const TokenizerSource& t = listed->tokenizer;
  REQUIRE(t.bos.has_value());
  CHECK(t.bos->id == 3);
  CHECK(t.bos->source == "config.json: bos_token_id");
  REQUIRE(t.eos.has_value());
  CHECK(t.eos->id == 300);
  CHECK(t.eos->source == "config.json: eos_token_id");
  std::vector<std::pair<int32_t, std::string>> more;
  for (const auto& named : t.more_end_ids) more.emplace_back(named.id, named.source);
  CHECK(more == std::vector<std::pair<int32_t, std::string>>{
                    {2, "config.json: eos_token_id"},
                    {301, "config.json: eos_token_id"},
                    {302, "generation_config.json: eos_token_id"},
                    {300, "generation_config.json: eos_token_id"}});
  CHECK(listed->config.bos_id == 3);
  CHECK(listed->config.eos_id == 300);

  // Without the keys the tokenizer.model's own ids apply.
  parley::test::write_hf_dir(spec, w, tmp / "bare", tmp / "tok.model",
                             hf_options(R"({"bos_token_id": null, "eos_token_id": null})"));
  const auto bare = load_model((tmp / "bare").string());
  CHECK_FALSE(bare->tokenizer.bos.has_value());
  CHECK_FALSE(bare->tokenizer.eos.has_value());
  CHECK(bare->tokenizer.more_end_ids.empty());

  parley::test::write_hf_dir(spec, w, tmp / "badgen", tmp / "tok.model",
                             hf_options("", R"({"eos_token_id": "2"})"));
  CHECK_PARLEY_ERROR(load_model((tmp / "badgen").string()), Status::bad_model,
                     "generation_config.json", "eos_token_id");
}

TEST_CASE("loader: the end ids a model adds leave its fingerprint as it was") {
  parley::test::TempDir tmp;
  parley::test::write_bytes(tmp / "tok.model", "x");
  SynthSpec spec;
  const auto w = parley::test::make_synth_weights(spec);
  parley::test::write_hf_dir(spec, w, tmp / "a", tmp / "tok.model");
  parley::test::write_hf_dir(spec, w, tmp / "b", tmp / "tok.model",
                             hf_options("", R"({"eos_token_id": [2, 7]})"));
  CHECK(load_model((tmp / "a").string())->fingerprint ==
        load_model((tmp / "b").string())->fingerprint);

  auto vocab = parley::test::make_spm_vocab(spec.n_vocab);
  parley::test::write_gguf(spec, w, vocab, tmp / "a.gguf");
  vocab.eot_id = 2;
  vocab.eom_id = 1;
  parley::test::write_gguf(spec, w, vocab, tmp / "b.gguf");
  const auto a = load_model((tmp / "a.gguf").string());
  const auto b = load_model((tmp / "b.gguf").string());
  CHECK(a->tokenizer.more_end_ids.empty());
  CHECK(b->tokenizer.more_end_ids.size() == 2);
  CHECK(a->fingerprint == b->fingerprint);
}

TEST_CASE("loader: a Hugging Face directory's rope_parameters give the RoPE base") {
  parley::test::TempDir tmp;
  parley::test::write_bytes(tmp / "tok.model", "x");
  SynthSpec spec;
  const auto w = parley::test::make_synth_weights(spec);
  parley::test::write_hf_dir(
      spec, w, tmp / "m", tmp / "tok.model",
      hf_options(R"({"rope_theta": null, "rope_scaling": null,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}})"));
  CHECK(load_model((tmp / "m").string())->config.rope_theta == 500000.0f);
  parley::test::write_hf_dir(
      spec, w, tmp / "yarn", tmp / "tok.model",
      hf_options(R"({"rope_theta": null, "rope_scaling": null,
                     "rope_parameters": {"rope_type": "yarn", "factor": 4.0}})"));
  CHECK_PARLEY_ERROR(load_model((tmp / "yarn").string()), Status::unsupported,
                     "rope_parameters of type \"yarn\"");
}

TEST_CASE("loader: chat_template.jinja comes before tokenizer_config.json's chat_template") {
  parley::test::TempDir tmp;
  parley::test::write_bytes(tmp / "tok.model", "x");
  SynthSpec spec;
  const auto w = parley::test::make_synth_weights(spec);
  const std::string chatml = "{{ '<|im_start|>' + message['role'] }}\n";
  parley::test::write_hf_dir(spec, w, tmp / "both", tmp / "tok.model",
                             {.chat_template = "[INST] {{ x }} [/INST]"});
  parley::test::write_bytes(tmp / "both" / "chat_template.jinja", chatml);
  CHECK(load_model((tmp / "both").string())->config.chat_template == chatml);

  parley::test::write_hf_dir(spec, w, tmp / "only", tmp / "tok.model");
  parley::test::write_bytes(tmp / "only" / "chat_template.jinja", chatml);
  CHECK(load_model((tmp / "only").string())->config.chat_template == chatml);

  parley::test::write_hf_dir(spec, w, tmp / "empty", tmp / "tok.model", {.chat_template = "T"});
  parley::test::write_bytes(tmp / "empty" / "chat_template.jinja", "");
  CHECK(load_model((tmp / "empty").string())->config.chat_template == "T");

  parley::test::write_hf_dir(spec, w, tmp / "latin1", tmp / "tok.model", {.chat_template = "T"});
  parley::test::write_bytes(tmp / "latin1" / "chat_template.jinja", "{{ 'caf\xe9' }}");
  CHECK_PARLEY_ERROR(load_model((tmp / "latin1").string()), Status::bad_model,
                     "chat_template.jinja' is not valid UTF-8");
  parley::test::write_bytes(tmp / "latin1" / "chat_template.jinja",
                            "version https://git-lfs.github.com/spec/v1\noid sha256:00\n");
  CHECK_PARLEY_ERROR(load_model((tmp / "latin1").string()), Status::bad_model,
                     "chat_template.jinja' is a Git LFS pointer");
}

namespace {

// Runs the test from another working directory, and goes back.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const std::filesystem::path& dir)
      : saved_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~WorkingDirectory() { std::filesystem::current_path(saved_); }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

 private:
  std::filesystem::path saved_;
};

}  // namespace

TEST_CASE("loader: a Hugging Face directory is named after itself, however the path is written") {
  parley::test::TempDir tmp;
  parley::test::write_bytes(tmp / "tok.model", "x");
  SynthSpec spec;
  const auto dir = tmp / "my-model";
  parley::test::write_hf_dir(spec, parley::test::make_synth_weights(spec), dir, tmp / "tok.model");
  std::filesystem::create_directory(dir / "sub");
  for (const std::string& path : {dir.string(), dir.string() + "/", dir.string() + "/.",
                                  dir.string() + "/./", dir.string() + "/sub/.."}) {
    CAPTURE(path);
    CHECK(load_model(path)->config.name == "my-model");
  }
  {
    const WorkingDirectory inside(dir);
    for (const std::string path : {".", "./", "sub/..", "./sub/../"}) {
      CAPTURE(path);
      CHECK(load_model(path)->config.name == "my-model");
    }
  }
  const WorkingDirectory below(dir / "sub");
  CHECK(load_model("..")->config.name == "my-model");
  CHECK(load_model("../")->config.name == "my-model");
}

TEST_CASE("loader: paths that are not models") {
  parley::test::TempDir tmp;
  CHECK_PARLEY_ERROR(load_model((tmp / "absent.gguf").string()), Status::not_found, "absent.gguf");
  parley::test::write_bytes(tmp / "notes.txt", "hello, world");
  CHECK_PARLEY_ERROR(load_model((tmp / "notes.txt").string()), Status::bad_model,
                     "not a GGUF file or a Hugging Face directory");
  parley::test::write_bytes(tmp / "empty", "");
  CHECK_PARLEY_ERROR(load_model((tmp / "empty").string()), Status::bad_model, "empty",
                     "is empty (0 bytes)");
  parley::test::write_bytes(tmp / "short", "GG");
  CHECK_PARLEY_ERROR(load_model((tmp / "short").string()), Status::bad_model, "not a GGUF file");
  std::filesystem::create_directory(tmp / "emptydir");
  CHECK_PARLEY_ERROR(load_model((tmp / "emptydir").string()), Status::bad_model, "config.json");
}

TEST_CASE("loader: Hugging Face directories with missing or inconsistent parts") {
  parley::test::TempDir tmp;
  SynthSpec spec;
  const auto w = parley::test::make_synth_weights(spec);
  parley::test::write_bytes(tmp / "tok.model", "x");
  SUBCASE("no tokenizer.model") {
    parley::test::write_hf_dir(spec, w, tmp / "m", "");
    CHECK_PARLEY_ERROR(load_model((tmp / "m").string()), Status::bad_model,
                       "tokenizer.model missing: only sentencepiece tokenizers are supported");
  }
  SUBCASE("no weights") {
    parley::test::write_hf_dir(spec, w, tmp / "m", tmp / "tok.model");
    std::filesystem::remove(tmp / "m" / "model.safetensors");
    CHECK_PARLEY_ERROR(load_model((tmp / "m").string()), Status::bad_model, "model.safetensors");
  }
  SUBCASE("config and tensors disagree") {
    SynthSpec other = spec;
    other.n_vocab = 400;
    parley::test::write_hf_dir(spec, w, tmp / "m", tmp / "tok.model");
    parley::test::write_hf_dir(other, parley::test::make_synth_weights(other), tmp / "o",
                               tmp / "tok.model");
    std::filesystem::copy_file(tmp / "o" / "config.json", tmp / "m" / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    CHECK_PARLEY_ERROR(load_model((tmp / "m").string()), Status::bad_model,
                       "'model.embed_tokens.weight'", "shape");
  }
  SUBCASE("inconsistent heads") {
    parley::test::write_hf_dir(spec, w, tmp / "m", tmp / "tok.model");
    std::string config = parley::test::read_file(tmp / "m" / "config.json");
    config.replace(config.find("\"num_key_value_heads\": 2"), 24, "\"num_key_value_heads\": 3");
    parley::test::write_bytes(tmp / "m" / "config.json", config);
    CHECK_PARLEY_ERROR(load_model((tmp / "m").string()), Status::bad_model, "n_kv_heads");
  }
}

namespace {

// A GGUF of the default synthetic spec whose metadata or tensors a test changes.
std::string synthetic_gguf_bytes(const SynthSpec& spec, const parley::test::SynthVocab& vocab) {
  parley::test::TempDir tmp;
  parley::test::write_gguf(spec, parley::test::make_synth_weights(spec), vocab, tmp / "m.gguf");
  return parley::test::read_file(tmp / "m.gguf");
}

// The loader's GGUF pipeline over bytes in memory: parse, metadata, validate, weights.
void load_gguf_bytes(const std::string& bytes) {
  const auto file = parley::model::parse_gguf(parley::test::as_span(bytes));
  auto info = parley::model::read_gguf_metadata(file);
  info.config.validate();
  std::vector<parley::model::FileTensor> tensors;
  for (const auto& t : file.tensors) {
    parley::model::FileTensor ft{t.name, t.dtype, {}, t.data.data(), t.data.size()};
    for (uint32_t d = t.n_dims; d-- > 0;) ft.shape.push_back(t.ne[d]);
    tensors.push_back(ft);
  }
  (void)parley::model::build_weights(tensors, parley::model::TensorNaming::gguf, info.config,
                                     false);
}

}  // namespace

TEST_CASE("loader: GGUF files that parse but do not make a model") {
  parley::test::TempDir tmp;
  SynthSpec spec;
  const auto vocab = parley::test::make_spm_vocab(spec.n_vocab);
  SUBCASE("another architecture") {
    std::string bytes = synthetic_gguf_bytes(spec, vocab);
    const size_t at = bytes.find("llama", bytes.find("general.architecture"));
    bytes.replace(at, 5, "gemma");
    parley::test::write_bytes(tmp / "m.gguf", bytes);
    CHECK_PARLEY_ERROR(load_model((tmp / "m.gguf").string()), Status::unsupported,
                       "architecture 'gemma'");
  }
  SUBCASE("a Q3_K tensor") {
    parley::test::GgufBuilder b;
    b.header(1, 1).kv_str("general.architecture", "llama");
    b.tensor_info("token_embd.weight", {256, 4}, 11, 0).pad_to(32).raw(std::string(440, '\0'));
    parley::test::write_bytes(tmp / "q3.gguf", b.bytes());
    CHECK_PARLEY_ERROR(load_model((tmp / "q3.gguf").string()), Status::unsupported,
                       "'token_embd.weight'", "Q3_K");
  }
  SUBCASE("inconsistent hyperparameters") {
    SynthSpec bad = spec;
    bad.n_kv_heads = 3;  // 4 heads do not split into 3 groups
    bad.n_heads = 4;
    CHECK_PARLEY_ERROR(load_gguf_bytes(synthetic_gguf_bytes(bad, vocab)), Status::bad_model,
                       "n_kv_heads");
  }
  SUBCASE("a vocabulary that does not match the embedding") {
    CHECK_PARLEY_ERROR(
        load_gguf_bytes(synthetic_gguf_bytes(spec, parley::test::make_spm_vocab(300))),
        Status::bad_model, "tokenizer.ggml.tokens");
  }
  SUBCASE("a truncated file") {
    const std::string bytes = synthetic_gguf_bytes(spec, vocab);
    parley::test::write_bytes(tmp / "cut.gguf", bytes.substr(0, bytes.size() / 2));
    CHECK_PARLEY_ERROR(load_model((tmp / "cut.gguf").string()), Status::bad_model, "past the end");
  }
}

TEST_CASE("loader: every prefix and random corruptions of a small GGUF fail cleanly or load") {
  SynthSpec spec;
  spec.dim = 32;
  spec.hidden_dim = 32;
  spec.n_layers = 1;
  spec.n_heads = 2;
  spec.n_kv_heads = 1;
  spec.n_vocab = 260;
  spec.dtype = DType::q8_0;
  const std::string good = synthetic_gguf_bytes(spec, parley::test::make_spm_vocab(spec.n_vocab));
  CHECK_NOTHROW(load_gguf_bytes(good));
  // Cuts up to the end of the last tensor's data (what follows is only padding).
  const auto parsed = parley::model::parse_gguf(parley::test::as_span(good));
  size_t end = 0;
  for (const auto& t : parsed.tensors) {
    end = std::max(end, size_t(t.data.data() + t.data.size() - parley::test::as_span(good).data()));
  }
  for (size_t n = 0; n < end; n += (n < parsed.data_offset ? 1 : 7)) {
    INFO("prefix length ", n);
    CHECK_PARLEY_ERROR(load_gguf_bytes(good.substr(0, n)), Status::bad_model, "GGUF: ");
  }
  std::mt19937 rng(11);
  int failures = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = good;
    // Corrupt the metadata and directory, where the structure is.
    for (int i = 0; i < 3; ++i) bytes[rng() % 8192] = char(rng());
    try {
      load_gguf_bytes(bytes);
    } catch (const parley::Error& e) {
      ++failures;
      const bool expected = e.status() == Status::bad_model || e.status() == Status::unsupported;
      CHECK_MESSAGE(expected, e.what());
    }
  }
  CHECK(failures > 0);
}
