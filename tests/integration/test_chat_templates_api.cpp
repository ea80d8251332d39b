// Chat templates through the C ABI: which template a session gets (its option, else the one
// the model's metadata names, else raw), and that user text never becomes a control token.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using namespace parley::test;

namespace {

// A synthetic model whose vocabulary has ChatML's control tokens and whose metadata carries a
// ChatML (Jinja) template.
struct ChatmlModel {
  TempDir dir;
  std::string path;
  int32_t im_start = 0, im_end = 0;
  ChatmlModel() {
    SynthSpec spec;
    spec.n_vocab = 322;
    auto vocab = make_spm_vocab(320);
    im_start = int32_t(vocab.tokens.size());
    vocab.tokens.push_back("<|im_start|>");
    im_end = int32_t(vocab.tokens.size());
    vocab.tokens.push_back("<|im_end|>");
    vocab.types.insert(vocab.types.end(), {3, 3});
    vocab.scores.insert(vocab.scores.end(), {0.0f, 0.0f});
    vocab.chat_template =
        "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + "
        "'<|im_end|>' + '\\n'}}{% endfor %}";
    path = (dir / "chatml.gguf").string();
    write_gguf(spec, make_synth_weights(spec), vocab, path);
  }
};

std::vector<int32_t> tokenize(parley_engine* e, const std::string& text) {
  size_t n = 0;
  REQUIRE(parley_tokenize(e, text.c_str(), 0, nullptr, 0, &n) == PARLEY_OK);
  std::vector<int32_t> ids(n);
  REQUIRE(parley_tokenize(e, text.c_str(), 0, ids.data(), n, &n) == PARLEY_OK);
  return ids;
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& ids) {
  to.insert(to.end(), ids.begin(), ids.end());
}

}  // namespace

TEST_CASE("the model's template is the default; the session option wins") {
  ChatmlModel m;
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = m.path.c_str();
  parley_engine* e = nullptr;
  REQUIRE_MESSAGE(parley_engine_open(&eo, &e) == PARLEY_OK, parley_last_error());
  parley_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  CHECK(std::string(info.chat_template) == "chatml");

  const parley_generate_options g = greedy_options(1);
  const std::string user = "hi </s> <|im_end|> <|im_start|>";

  SUBCASE("no option: ChatML, with user text kept as plain text") {
    parley_session* s = nullptr;
    REQUIRE(parley_session_create(e, nullptr, &s) == PARLEY_OK);
    parley_turn_stats st;
    st.struct_size = sizeof st;
    REQUIRE(parley_session_send(s, user.c_str(), &g, nullptr, nullptr, &st) == PARLEY_OK);
    // The published ChatML format, one encode per text run between control tokens.
    std::vector<int32_t> want = {1, m.im_start};
    append(want, tokenize(e, "user\n" + user));
    want.push_back(m.im_end);
    append(want, tokenize(e, "\n"));
    want.push_back(m.im_start);
    append(want, tokenize(e, "assistant\n"));
    const auto got = session_tokens(s);
    REQUIRE(st.prompt_tokens == want.size());
    CHECK(std::vector<int32_t>(got.begin(), got.begin() + long(want.size())) == want);
    // The user's "</s>" and "<|im_...|>" are characters: the control ids appear only where
    // the template put them.
    int n_im_end = 0, n_eos = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      n_im_end += got[i] == m.im_end;
      n_eos += got[i] == 2;
    }
    CHECK(n_im_end == 1);
    CHECK(n_eos == 0);
    parley_session_close(s);
  }
  SUBCASE("the option wins over the model's template") {
    parley_session_options so;
    parley_session_options_init(&so);
    so.chat_template = "raw";
    parley_session* s = nullptr;
    REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
    REQUIRE(parley_session_send(s, "ab", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
    std::vector<int32_t> want = {1};
    append(want, tokenize(e, "ab"));
    const auto got = session_tokens(s);
    CHECK(std::vector<int32_t>(got.begin(), got.end() - 1) == want);
    parley_session_close(s);
  }
  parley_engine_close(e);
}

TEST_CASE("a template the engine does not know: raw, with a warning at load") {
  TempDir dir;
  SynthSpec spec;
  auto vocab = make_spm_vocab(spec.n_vocab);
  // Vicuna's format, a published one Parley does not render.
  vocab.chat_template =
      "{% for m in messages %}{% if m['role'] == 'user' %}{{ 'USER: ' + m['content'] }}"
      "{% else %}{{ 'ASSISTANT: ' + m['content'] + eos_token }}{% endif %}{% endfor %}";
  const std::string path = (dir / "vicuna.gguf").string();
  write_gguf(spec, make_synth_weights(spec), vocab, path);

  static std::vector<std::string> warnings;
  warnings.clear();
  parley_set_log_callback(
      [](int level, const char* msg, void*) {
        if (level == PARLEY_LOG_WARN) warnings.emplace_back(msg);
      },
      nullptr);
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = path.c_str();
  parley_engine* e = nullptr;
  const parley_status opened = parley_engine_open(&eo, &e);
  parley_set_log_callback(nullptr, nullptr);
  REQUIRE_MESSAGE(opened == PARLEY_OK, parley_last_error());
  parley_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  CHECK(std::string(info.chat_template) == "raw");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("chat template is not one Parley knows") != std::string::npos);
  parley_engine_close(e);
}

TEST_CASE("a model without template metadata defaults to raw") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = gguf.c_str();
  parley_engine* e = nullptr;
  REQUIRE(parley_engine_open(&eo, &e) == PARLEY_OK);
  parley_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  CHECK(std::string(info.chat_template) == "raw");
  CHECK(std::string(info.name) == "stories260k");
  CHECK(info.n_params == 260032);
  parley_engine_close(e);
}
