// parley_session_count_tokens: what a send would add before its reply, measured before it is
// sent, agrees with what the send then reports, and says when a message will not fit.
#include <doctest/doctest.h>

#include <string>

#include "parley.h"
#include "support/c_api_options.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

struct Measure {
  uint32_t prompt_tokens = 0;
  uint32_t context_left = 0;
};

Measure measure(parley_session* s, const char* text) {
  Measure m;
  REQUIRE_MESSAGE(parley_session_count_tokens(s, text, &m.prompt_tokens, &m.context_left) ==
                      PARLEY_OK,
                  parley_last_error());
  return m;
}

}  // namespace

TEST_CASE("count_tokens: a message measures what its send reports, and what is left after it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  for (const char* chat_template : {"raw", "llama2", "chatml"}) {
    CAPTURE(chat_template);
    parley_session_options so;
    parley_session_options_init(&so);
    so.chat_template = chat_template;
    so.system_prompt = "You tell stories.";
    parley_session* s = nullptr;
    REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
    const parley_generate_options g = greedy_options(12);
    parley_turn_stats stats{};
    stats.struct_size = sizeof stats;
    // The first message (with the system prompt), a later one (after a reply cut at
    // max_tokens, which it closes), and one after a rewound reply.
    for (const char* text : {"Tell me a story.", "And then?", "What next?"}) {
      CAPTURE(text);
      const uint32_t before = session_info(s).n_tokens;
      const Measure m = measure(s, text);
      CHECK(m.context_left == info.context_length - before - m.prompt_tokens);
      CHECK(session_info(s).n_tokens == before);  // measuring changes nothing
      REQUIRE(parley_session_send(s, text, &g, nullptr, nullptr, &stats) == PARLEY_OK);
      CHECK(stats.prompt_tokens == m.prompt_tokens);
      CHECK(session_info(s).n_tokens == before + m.prompt_tokens + stats.generated_tokens);
      if (std::string(text) == "And then?") REQUIRE(parley_session_rewind(s, 1) == PARLEY_OK);
    }
    parley_session_close(s);
  }

  // A message that does not fit: 0 left, and the send refuses it.
  parley_session* s = create_raw_session(e, nullptr);
  std::string huge;
  while (huge.size() < 8 * info.context_length) huge += "and the dog ran ";
  const Measure m = measure(s, huge.c_str());
  CHECK(m.prompt_tokens > info.context_length);
  CHECK(m.context_left == 0);
  const parley_generate_options g = greedy_options(4);
  CHECK(parley_session_send(s, huge.c_str(), &g, nullptr, nullptr, nullptr) ==
        PARLEY_E_CONTEXT_FULL);
  uint32_t only_one = 0;
  REQUIRE(parley_session_count_tokens(s, "Once", &only_one, nullptr) == PARLEY_OK);
  CHECK(only_one > 0);
  CHECK(parley_session_count_tokens(s, "bad \xC0\xAF", nullptr, nullptr) ==
        PARLEY_E_INVALID_ARGUMENT);
  parley_session_close(s);
  parley_engine_close(e);
}

// A message far longer than the context is refused from its beginning, without tokenizing
// all of it; the refusal agrees with the whole message's count, and a long message that
// tokenizes short (blanks a normalizer folds) is not refused so.
TEST_CASE("a message far longer than the context: CONTEXT_FULL from its first words") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_session* s = create_raw_session(e, "long");
  std::string story;
  while (story.size() < 1000000) story += "Once upon a time, there was a little girl. ";
  auto g = greedy_options(2);
  CHECK(parley_session_send(s, story.c_str(), &g, nullptr, nullptr, nullptr) ==
        PARLEY_E_CONTEXT_FULL);
  const std::string why = parley_last_error();
  CAPTURE(why);
  CHECK(why.find("its first") != std::string::npos);
  const size_t at = why.find("needs more than ");
  REQUIRE(at != std::string::npos);
  const unsigned long claimed = std::stoul(why.substr(at + 16));
  CHECK(measure(s, story.c_str()).prompt_tokens > claimed);
  CHECK(session_tokens(s).empty());

  // Blanks the normalizer may fold: refused exactly when the whole message does not fit.
  const std::string airy = "Once" + std::string(200000, ' ') + "upon a time";
  const Measure m = measure(s, airy.c_str());
  const bool fits = m.context_left > 0;
  CHECK(parley_session_send(s, airy.c_str(), &g, nullptr, nullptr, nullptr) ==
        (fits ? PARLEY_OK : PARLEY_E_CONTEXT_FULL));
  parley_session_close(s);
  parley_engine_close(e);
}

// Its answer can only be "does not fit": a message far longer than the context is measured
// from its first words, as a send refuses it, not tokenized whole.
TEST_CASE("count_tokens: a message far longer than the context is measured from its beginning") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_DEFAULT);
  parley_model_info info{};
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  parley_session* s = create_raw_session(e, "long");
  std::string story;
  while (story.size() < 1000000) story += "Once upon a time, there was a little girl. ";
  size_t whole = 0;
  REQUIRE(parley_tokenize(e, story.c_str(), 1, nullptr, 0, &whole) == PARLEY_OK);
  const Measure m = measure(s, story.c_str());
  CHECK(m.prompt_tokens > info.context_length);  // a lower bound that still says too many
  CHECK(m.prompt_tokens < whole / 10);           // from the beginning only
  CHECK(m.context_left == 0);
  parley_session_close(s);
  parley_engine_close(e);
}
