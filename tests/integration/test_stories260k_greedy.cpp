// The real stories260K model through the C ABI reproduces llama2.c's greedy continuations
// token for token, from the Hugging Face directory and from the F32 GGUF (F32 KV).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "golden.h"
#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

struct Reply {
  parley_status status = -1;
  std::string text;
  std::vector<int32_t> all_ids;
  parley_turn_stats stats{};
};

Reply greedy_reply(parley_engine* e, const std::string& prompt, uint32_t max_tokens) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.chat_template = "raw";
  parley_session* s = nullptr;
  Reply r;
  REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
  const parley_generate_options g = greedy_options(max_tokens);
  r.stats.struct_size = sizeof r.stats;
  auto collect = [](const char* utf8, size_t len, void* user) {
    static_cast<std::string*>(user)->append(utf8, len);
    return 0;
  };
  r.status = parley_session_send(s, prompt.c_str(), &g, collect, &r.text, &r.stats);
  r.all_ids = session_tokens(s);
  parley_session_close(s);
  return r;
}

void check_model_reproduces_goldens(const std::string& model_path) {
  PARLEY_SHARED_OR_SKIP(goldens_path, "golden/stories260k_greedy.jsonl");
  parley_engine* e = open_engine(model_path, PARLEY_KV_F32);

  for (const auto& golden : read_greedy_goldens(goldens_path)) {
    CAPTURE(golden.name);
    const Reply r = greedy_reply(e, golden.prompt, uint32_t(golden.generated_ids.size()));
    REQUIRE_MESSAGE(r.status == PARLEY_OK, parley_last_error());
    std::vector<int32_t> expected = golden.prompt_ids;
    expected.insert(expected.end(), golden.generated_ids.begin(), golden.generated_ids.end());
    CHECK(r.all_ids == expected);
    CHECK(r.stats.prompt_tokens == golden.prompt_ids.size());
    CHECK(r.stats.generated_tokens == golden.generated_ids.size());
    // The streamed reply continues the prompt exactly as sentencepiece decodes the whole
    // (the prompt as decoded: this tokenizer collapses runs of spaces).
    char prompt_text[512];
    size_t needed = 0;
    REQUIRE(parley_detokenize(e, golden.prompt_ids.data(), golden.prompt_ids.size(), prompt_text,
                              sizeof prompt_text, &needed) == PARLEY_OK);
    REQUIRE(needed <= sizeof prompt_text);
    CHECK(std::string(prompt_text) + r.text == golden.full_text);
  }
  parley_engine_close(e);
}

}  // namespace

TEST_CASE("stories260K F32 GGUF: greedy continuations equal llama2.c's") {
  PARLEY_SHARED_OR_SKIP(model, "models/stories260k/stories260k-f32.gguf");
  check_model_reproduces_goldens(model.string());
}

TEST_CASE("stories260K Hugging Face directory: greedy continuations equal llama2.c's") {
  PARLEY_SHARED_OR_SKIP(model, "models/stories260k/hf");
  check_model_reproduces_goldens(model.string());
}
