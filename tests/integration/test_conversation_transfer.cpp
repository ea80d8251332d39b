// Conversations out of and into portable JSON (Session::export_json / import_json,
// parley_session_export / parley_session_import): the same model takes a conversation back
// with its ids and goes on as the original would; texts alone, or another model's ids, are
// added exchange by exchange; a malformed file is refused, naming its first wrong field, and
// leaves nothing behind.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "parley.h"
#include "session_fixture.h"
#include "support/c_api_sessions.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;
using Json = nlohmann::json;

namespace {

// A conversation with a system prompt, two generated replies and a written one.
std::unique_ptr<engine::Session> conversation(std::shared_ptr<engine::Engine> engine,
                                             const std::string& chat_template,
                                             const std::string& id) {
  auto options = session_options("You tell short stories.", chat_template);
  options.id = id;
  auto s = std::make_unique<engine::Session>(engine, options);
  greedy_turn(*s, "Tell me about a cat.", 12);
  s->add_exchange("And a dog?", "The dog was big and brown.");
  greedy_turn(*s, "What did they do?", 10);
  return s;
}

void check_same_messages(const engine::Session& a, const engine::Session& b) {
  REQUIRE(a.messages().size() == b.messages().size());
  for (size_t i = 0; i < a.messages().size(); ++i) {
    CAPTURE(i);
    CHECK(a.messages()[i].role == b.messages()[i].role);
    CHECK(a.messages()[i].text == b.messages()[i].text);
    CHECK(a.messages()[i].n_tokens == b.messages()[i].n_tokens);
    CHECK(a.messages()[i].closed == b.messages()[i].closed);
  }
  CHECK(a.tokens() == b.tokens());
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// The status and message import_json fails with; ok and "" when it does not.
std::pair<Status, std::string> import_error(std::shared_ptr<engine::Engine> engine,
                                            const std::string& json,
                                            const std::string& new_id = "") {
  try {
    engine::Session::import_json(std::move(engine), json, new_id);
  } catch (const Error& e) {
    return {e.status(), e.what()};
  }
  return {Status::ok, ""};
}

// An engine on `model` whose context holds `context` tokens (0: the model's), with a store at
// `store_path`.
std::shared_ptr<engine::Engine> open_engine_with_context(const std::string& model,
                                                         const std::string& store_path,
                                                         uint32_t context) {
  engine::EngineOptions o;
  o.model_path = model;
  o.kv_type = kv::KvType::f32;
  o.n_threads = 2;
  o.store_path = store_path;
  o.context_length = context;
  return std::make_shared<engine::Engine>(o);
}

bool holds(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("an imported conversation has the original's ids and goes on as the original does") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  for (const char* chat_template : {"raw", "llama2", "chatml"}) {
    CAPTURE(chat_template);
    auto engine = open_engine(gguf.string(), kv::KvType::f32);
    auto original = conversation(engine, chat_template, "original");
    const std::string json = original->export_json();

    // Another engine on the same model, as after a restart without a store.
    auto other = open_engine(gguf.string(), kv::KvType::f32);
    auto imported = engine::Session::import_json(other, json, "");
    CHECK(imported->id() == "original");
    check_same_messages(*original, *imported);
    CHECK(imported->kv_bytes_resident() == 0);

    const auto went_on = greedy_turn(*original, "Then what?", 16);
    const auto stats = greedy_turn(*imported, "Then what?", 16);
    CHECK(stats.kv_source == engine::KvSource::fresh);
    CHECK(stats.reused_tokens == 0);
    CHECK(stats.computed_tokens == went_on.computed_tokens + went_on.reused_tokens);
    check_same_messages(*original, *imported);
    CHECK(max_abs_diff(original->last_logits(), imported->last_logits()) < 1e-4f);
  }
}

TEST_CASE("an import into a store is a stored conversation; its KV is rebuilt on first use") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string db = (dir / "s.db").string();
  auto source = open_engine(gguf.string(), kv::KvType::int8);
  const auto original = conversation(source, "llama2", "saved");
  const std::string json = original->export_json();
  {
    auto engine = open_engine_with_store(gguf.string(), kv::KvType::int8, {db});
    auto imported = engine::Session::import_json(engine, json, "");
    CHECK(engine->store()->list_sessions() == std::vector<std::string>{"saved"});
    CHECK(engine->store()->load_turns("saved").size() == imported->messages().size());
    // The id is taken now: the same file again needs another one.
    const auto [status, message] = import_error(engine, json);
    CHECK(status == Status::invalid_argument);
    CHECK(message.find("'saved'") != std::string::npos);
    auto copy = engine::Session::import_json(engine, json, "saved-2");
    check_same_messages(*imported, *copy);

    const auto stats = greedy_turn(*imported, "Then what?", 8);
    CHECK(stats.kv_source == engine::KvSource::rebuilt);
  }
  // Reopened after the engine is gone: the conversation as it was imported, and its turn.
  auto engine = open_engine_with_store(gguf.string(), kv::KvType::int8, {db});
  auto reopened = engine::Session::open(engine, "saved");
  auto copy = engine::Session::open(engine, "saved-2");
  check_same_messages(*original, *copy);  // each message's own count, the system prompt's too
  REQUIRE(reopened->messages().size() == copy->messages().size() + 2);
  CHECK(std::equal(copy->tokens().begin(), copy->tokens().end(), reopened->tokens().begin()));
}

TEST_CASE("texts alone, or another model's ids, are added exchange by exchange") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  auto original = conversation(engine, "chatml", "original");
  original->rewind(1);  // the last message is a user message without a reply
  const Json exported = Json::parse(original->export_json());

  // What add_exchange makes of the same texts.
  auto options = session_options("You tell short stories.", "chatml");
  engine::Session expected(engine, options);
  const auto& m = exported["messages"];
  for (size_t i = 1; i < m.size(); i += 2) {
    const std::string reply = i + 1 < m.size() ? m[i + 1]["text"].get<std::string>() : "";
    expected.add_exchange(m[i]["text"].get<std::string>(), reply);
  }

  Json texts_only = exported;
  for (auto& message : texts_only["messages"]) message.erase("tokens");
  texts_only.erase("model_fingerprint");
  Json other_model = exported;
  other_model["model_fingerprint"] = "0123456789abcdef";
  for (const Json* json : {&texts_only, &other_model}) {
    auto imported = engine::Session::import_json(engine, json->dump(), "copy");
    CHECK(imported->tokens() == expected.tokens());
    // The last message still awaits its reply, as in the original.
    REQUIRE(imported->messages().size() == original->messages().size());
    for (size_t i = 0; i < original->messages().size(); ++i) {
      CAPTURE(i);
      CHECK(imported->messages()[i].role == original->messages()[i].role);
      CHECK(imported->messages()[i].text == original->messages()[i].text);
    }
    CHECK(imported->kv_bytes_resident() > 0);  // computed as the exchanges were added
    // So continuing writes that reply, as it would in the original.
    engine::GenerateParams greedy;
    greedy.sampler.temperature = 0;
    greedy.max_tokens = 6;
    auto twin = original->fork("");
    engine::TurnStats a, b;
    imported->continue_reply(greedy, nullptr, a);
    twin->continue_reply(greedy, nullptr, b);
    CHECK(imported->messages().back().text == twin->messages().back().text);
    CHECK(imported->messages().size() == twin->messages().size());
  }
}

TEST_CASE("a user message right after another: its missing reply is an empty turn, ids or not") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  auto original = conversation(engine, "chatml", "original");
  Json edited = Json::parse(original->export_json());
  edited["messages"].erase(2);  // the first reply: two user messages in a row
  Json texts_only = edited;
  for (auto& message : texts_only["messages"]) message.erase("tokens");
  texts_only.erase("model_fingerprint");
  auto with_ids = engine::Session::import_json(engine, edited.dump(), "ids");
  auto from_texts = engine::Session::import_json(engine, texts_only.dump(), "texts");
  REQUIRE(with_ids->messages().size() == edited["messages"].size() + 1);
  REQUIRE(with_ids->messages().size() == from_texts->messages().size());
  for (size_t i = 0; i < with_ids->messages().size(); ++i) {
    CAPTURE(i);
    CHECK(with_ids->messages()[i].role == from_texts->messages()[i].role);
    CHECK(with_ids->messages()[i].text == from_texts->messages()[i].text);
  }
  const auto& missing = with_ids->messages()[2];
  CHECK(missing.role == engine::Role::assistant);
  CHECK(missing.text.empty());
  CHECK(missing.n_tokens == 0);
  // The ids are the file's, as they were: the model reads what it was given.
  size_t n_ids = 0;
  for (const auto& message : edited["messages"]) {
    n_ids += message.value("tokens", Json::array()).size();
  }
  CHECK(with_ids->tokens().size() == n_ids);
}

TEST_CASE("texts alone keep which replies are closed: those end as the model ends one") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  const int32_t eos = engine->tokenizer().eos_id();
  for (const char* chat_template : {"chatml", "raw"}) {
    CAPTURE(chat_template);
    Json open = Json::parse(conversation(engine, chat_template, "original")->export_json());
    for (auto& message : open["messages"]) message.erase("tokens");
    open.erase("model_fingerprint");
    auto& m = open["messages"];  // system, then three exchanges
    REQUIRE(m.size() == 7);
    for (size_t i = 2; i < m.size(); i += 2) m[i]["closed"] = false;
    Json closed = open;
    closed["messages"][2]["closed"] = true;
    closed["messages"][6]["closed"] = true;

    auto as_written = engine::Session::import_json(engine, open.dump(), "open");
    auto ended = engine::Session::import_json(engine, closed.dump(), "closed");
    for (size_t i = 2; i < m.size(); i += 2) {
      CAPTURE(i);
      CHECK(ended->messages()[i].closed == closed["messages"][i]["closed"].get<bool>());
      CHECK_FALSE(as_written->messages()[i].closed);
    }
    // Exported again, they say so.
    const Json again = Json::parse(ended->export_json());
    for (size_t i = 2; i < m.size(); i += 2) {
      CHECK(again["messages"][i]["closed"] == closed["messages"][i]["closed"]);
    }
    // A closed last reply is complete: there is no more of it to generate.
    engine::GenerateParams greedy;
    greedy.sampler.temperature = 0;
    greedy.max_tokens = 4;
    engine::TurnStats stats;
    CHECK_THROWS_AS(ended->continue_reply(greedy, nullptr, stats), Error);
    as_written->fork("")->continue_reply(greedy, nullptr, stats);  // an open one goes on
    CHECK(stats.generated_tokens == 4);

    // A closed reply ends as the model ends one: here with EOS (raw, and chatml on a vocabulary
    // without an <|im_end|> token), where an open one's next message starts with the
    // template's closing, if any.
    greedy_turn(*ended, "What then?", 4);
    greedy_turn(*as_written, "What then?", 4);
    const auto ids_of = [](const engine::Session& s, size_t i) {
      const auto& message = s.messages()[i];
      const auto begin = s.tokens().begin() + message.token_begin;
      return std::vector<int32_t>(begin, begin + message.n_tokens);
    };
    for (size_t i = 2; i < m.size(); i += 2) {
      CAPTURE(i);
      const bool is_closed = closed["messages"][i]["closed"].get<bool>();
      std::vector<int32_t> reply = ids_of(*as_written, i);
      if (is_closed) reply.push_back(eos);
      CHECK(ids_of(*ended, i) == reply);
      const auto next = ids_of(*ended, i + 1), next_open = ids_of(*as_written, i + 1);
      REQUIRE(next.size() <= next_open.size());
      CHECK(std::equal(next.rbegin(), next.rend(), next_open.rbegin()));
      if (!is_closed) CHECK(next == next_open);
    }
  }
}

TEST_CASE("ids longer than the context: refused, or under drop_oldest the oldest give way") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  Json long_one = Json::parse(conversation(engine, "llama2", "short")->export_json());
  // Exchanges repeated, ids and all, until they are more than the context (512) holds.
  const Json exchange = {long_one["messages"][3], long_one["messages"][4]};
  size_t n_ids = 0;
  for (const auto& m : long_one["messages"]) n_ids += m.value("tokens", Json::array()).size();
  for (int i = 0; n_ids <= engine->context_length(); ++i) {
    Json user = exchange[0];
    user["text"] = "Exchange " + std::to_string(i) + ".";  // the texts tell them apart
    long_one["messages"].push_back(user);
    long_one["messages"].push_back(exchange[1]);
    n_ids += user["tokens"].size() + exchange[1]["tokens"].size();
  }
  long_one["id"] = "long";
  CHECK(import_error(engine, long_one.dump()).first == Status::context_full);

  long_one["overflow"] = "drop_oldest";
  auto imported = engine::Session::import_json(engine, long_one.dump(), "");
  CHECK(imported->tokens().size() <= engine->context_length());
  const auto& kept = imported->messages();
  const auto& all = long_one["messages"];
  REQUIRE(kept.size() < all.size());
  CHECK(kept.front().text == "You tell short stories.");  // the system prompt stays
  // The newest exchanges, in order, to the last one.
  for (size_t k = kept.size(), i = all.size(); k-- > 1;) {
    CAPTURE(k);
    CHECK(kept[k].text == all[--i]["text"].get<std::string>());
  }
  CHECK(greedy_turn(*imported, "Then what?", 8).generated_tokens >= 1);  // it goes on
}

TEST_CASE("texts under drop_oldest: an old exchange longer than the context is left out") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  std::string huge;
  for (int i = 0; i < 300; ++i) huge += "the cat ran ";  // far more than the 512 of the context
  Json c = {{"format", "parley-conversation"}, {"version", 1}, {"chat_template", "raw"},
            {"overflow", "drop_oldest"},
            {"messages", {{{"role", "user"}, {"text", "Once upon a time"}},
                          {{"role", "assistant"}, {"text", huge}},
                          {{"role", "user"}, {"text", "The dog"}},
                          {{"role", "assistant"}, {"text", " ran home."}}}}};
  auto imported = engine::Session::import_json(engine, c.dump(), "kept");
  REQUIRE(imported->messages().size() == 2);
  CHECK(imported->messages()[0].text == "The dog");
  CHECK(imported->messages()[1].text == " ran home.");

  c["overflow"] = "error";  // nothing gives way; the refusal says which message it is
  const auto [status, message] = import_error(engine, c.dump());
  CHECK(status == Status::context_full);
  CHECK(message.starts_with("conversation JSON: messages[0] and its reply: "));
  c["overflow"] = "drop_oldest";
  c["messages"][3]["text"] = huge;  // the last exchange must fit
  CHECK(import_error(engine, c.dump()).first == Status::context_full);
}

TEST_CASE("a malformed conversation is refused, naming what is wrong, and nothing is stored") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  auto engine = open_engine_with_store(gguf.string(), kv::KvType::int8, {(dir / "s.db").string()});
  const Json valid = Json::parse(conversation(engine, "llama2", "valid")->export_json());
  const auto n_vocab = engine->config().n_vocab;

  struct Case {
    const char* name;
    std::function<void(Json&)> damage;
    const char* names;  // in the message
    Status status = Status::invalid_argument;
  };
  const std::vector<Case> cases = {
      {"not an object", [](Json& j) { j = Json::array(); }, "not an object"},
      {"no format", [](Json& j) { j.erase("format"); }, "'format'"},
      {"another format", [](Json& j) { j["format"] = "chat-log"; }, "'format'"},
      {"a newer version", [](Json& j) { j["version"] = 2; }, "version 2"},
      {"a version as text", [](Json& j) { j["version"] = "1"; }, "'version'"},
      {"no messages", [](Json& j) { j.erase("messages"); }, "'messages'"},
      {"messages an object", [](Json& j) { j["messages"] = Json::object(); }, "'messages'"},
      {"a message a string", [](Json& j) { j["messages"][1] = "hi"; }, "'messages[1]'"},
      {"an unknown role", [](Json& j) { j["messages"][1]["role"] = "narrator"; },
       "'messages[1].role'"},
      {"no text", [](Json& j) { j["messages"][2].erase("text"); }, "'messages[2].text'"},
      {"a number as text", [](Json& j) { j["messages"][2]["text"] = 7; }, "'messages[2].text'"},
      {"a NUL in a text", [](Json& j) { j["messages"][1]["text"] = std::string("a\0b", 3); },
       "NUL"},
      {"tokens as text", [](Json& j) { j["messages"][1]["tokens"] = "1 2"; },
       "'messages[1].tokens'"},
      {"a negative id", [](Json& j) { j["messages"][1]["tokens"][0] = -1; },
       "'messages[1].tokens'"},
      {"a fractional id", [](Json& j) { j["messages"][1]["tokens"][0] = 1.5; },
       "'messages[1].tokens'"},
      {"an id past the vocabulary",
       [n_vocab](Json& j) { j["messages"][2]["tokens"][0] = n_vocab; }, "vocabulary"},
      {"closed as text", [](Json& j) { j["messages"][2]["closed"] = "yes"; },
       "'messages[2].closed'"},
      {"a reply with text and no ids", [](Json& j) { j["messages"][2]["tokens"] = Json::array(); },
       "message 2 has no token ids, yet it has text"},
      {"the first message without ids",
       [](Json& j) {
         j["messages"][1]["tokens"] = Json::array();
         j["messages"][1]["text"] = "";
       },
       "message 1 has no token ids, yet it opens the conversation"},
      {"an unknown template", [](Json& j) { j["chat_template"] = "alpaca"; }, "'chat_template'"},
      {"an unknown overflow", [](Json& j) { j["overflow"] = "sometimes"; }, "'overflow'"},
      {"a fingerprint not hex", [](Json& j) { j["model_fingerprint"] = "xyz"; },
       "'model_fingerprint'"},
      {"a second system message",
       [](Json& j) { j["messages"][2] = {{"role", "system"}, {"text", "x"}}; }, "messages[2]"},
      {"a reply first", [](Json& j) { j["messages"].erase(1); }, "messages[1]"},
      {"a system prompt the message does not have",
       [](Json& j) { j["system_prompt"] = "Something else."; }, "differ"},
      {"an id with a line break", [](Json& j) { j["id"] = "a\nb"; }, "session id"},
      {"more ids than the context holds",
       [](Json& j) { j["messages"][1]["tokens"] = std::vector<int>(600, 5); }, "context",
       Status::context_full},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    Json damaged = valid;
    damaged["id"] = "damaged";
    c.damage(damaged);
    const auto [status, message] = import_error(engine, damaged.dump());
    CHECK(status == c.status);
    CHECK_MESSAGE(message.find(c.names) != std::string::npos, message);
  }
  for (const char* text : {"", "{", "{\"format\": \"parley-conversation\",", "null",
                           "{\"version\": 1e400}"}) {
    CAPTURE(text);
    CHECK(import_error(engine, text).first == Status::invalid_argument);
  }
  CHECK(engine->store()->list_sessions() == std::vector<std::string>{"valid"});
}

TEST_CASE("C ABI: parley_session_export and parley_session_import") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  parley_engine* e = open_engine(gguf.string(), PARLEY_KV_INT8);
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = "c-abi";
  so.system_prompt = "You tell short stories.";
  so.chat_template = "llama2";
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
  const parley_generate_options g = greedy_options(8);
  REQUIRE(parley_session_send(s, "Tell me a story.", &g, nullptr, nullptr, nullptr) == PARLEY_OK);

  // The buffer rule: the size first, then the text; a short buffer gets a cut, terminated one.
  size_t needed = 0;
  REQUIRE(parley_session_export(s, nullptr, 0, &needed) == PARLEY_OK);
  std::string json(needed, '\0');
  REQUIRE(parley_session_export(s, json.data(), json.size(), &needed) == PARLEY_OK);
  json.resize(needed - 1);
  CHECK(Json::parse(json)["id"] == "c-abi");
  char small[16];
  CHECK(parley_session_export(s, small, sizeof small, &needed) == PARLEY_OK);
  CHECK(std::string(small) == json.substr(0, 15));
  CHECK(parley_session_export(s, nullptr, 4, &needed) == PARLEY_E_INVALID_ARGUMENT);

  parley_session* copy = nullptr;
  CHECK(parley_session_import(e, json.c_str(), nullptr, &copy) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(copy == nullptr);
  CHECK(std::string(parley_last_error()).find("c-abi") != std::string::npos);  // in use
  CHECK(parley_session_import(e, json.c_str(), "", &copy) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_import(e, nullptr, "x", &copy) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_import(e, json.c_str(), "x", nullptr) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_session_import(e, "{}", "x", &copy) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::string(parley_last_error()).find("'format'") != std::string::npos);

  REQUIRE(parley_session_import(e, json.c_str(), "c-abi-copy", &copy) == PARLEY_OK);
  CHECK(std::string(session_info(copy).id) == "c-abi-copy");
  CHECK(session_tokens(copy) == session_tokens(s));
  parley_turn a{}, b{};
  a.struct_size = b.struct_size = sizeof a;
  for (uint32_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    REQUIRE(parley_session_get_turn(s, i, &a) == PARLEY_OK);
    const std::string text = a.text;
    REQUIRE(parley_session_get_turn(copy, i, &b) == PARLEY_OK);
    CHECK(a.role == b.role);
    CHECK(text == b.text);
  }
  REQUIRE(parley_session_send(s, "More.", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  REQUIRE(parley_session_send(copy, "More.", &g, nullptr, nullptr, nullptr) == PARLEY_OK);
  CHECK(session_tokens(copy) == session_tokens(s));
  parley_session_close(copy);
  parley_session_close(s);
  parley_engine_close(e);
}

TEST_CASE("a reply far longer than the context is refused from its first words, naming it") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  std::string story;
  while (story.size() < 1000000) story += "Once upon a time, there was a little girl. ";
  Json c = {{"format", "parley-conversation"}, {"version", 1}, {"chat_template", "raw"},
            {"messages", {{{"role", "user"}, {"text", "Hello"}},
                          {{"role", "assistant"}, {"text", ", she said."}},
                          {{"role", "user"}, {"text", "Then"}},
                          {{"role", "assistant"}, {"text", story}}}}};
  const auto [status, message] = import_error(engine, c.dump(), "long-reply");
  CHECK(status == Status::context_full);
  CAPTURE(message);
  CHECK(message.starts_with("conversation JSON: messages[2] and its reply: the reply needs "
                            "more than "));
  CHECK(holds(message, "its first"));
}

TEST_CASE("an opening longer than the context: import and open refuse it, as create does") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  TempDir dir;
  const std::string store = (dir / "s.db").string();
  const std::string prompt =
      "The cat sat on the mat and the dog ran in the park and the bird sang in the tree. The "
      "cat sat on the mat and the dog ran in the park and the bird sang in the tree.";
  auto options = session_options(prompt, "raw");
  options.id = "long-opening";
  std::string exported;
  {
    auto roomy = open_engine_with_context(gguf.string(), store, 0);
    engine::Session s(roomy, options);
    exported = s.export_json();
    REQUIRE(Json::parse(exported)["messages"].size() == 1);  // no ids to count: the prompt only
  }
  auto narrow = open_engine_with_context(gguf.string(), store, 32);
  options.id = "created";
  std::string created_refusal;
  try {
    engine::Session s(narrow, options);
    FAIL("created");
  } catch (const Error& e) {
    CHECK(e.status() == Status::context_full);
    created_refusal = e.what();
  }
  REQUIRE(holds(created_refusal, "opening"));
  // With its ids (this model's fingerprint) or from its texts.
  for (const Json& given : {Json::parse(exported), [&] {
         Json j = Json::parse(exported);
         j.erase("model_fingerprint");
         return j;
       }()}) {
    const auto [status, message] = import_error(narrow, given.dump(), "imported");
    CHECK(status == Status::context_full);
    CHECK(message == created_refusal);
  }
  try {
    engine::Session::open(narrow, "long-opening");
    FAIL("opened");
  } catch (const Error& e) {
    CHECK(e.status() == Status::context_full);
    CHECK(holds(e.what(), "opening"));
    CHECK(holds(e.what(), "nothing was changed"));
  }
  // Left as it was, for an engine whose context holds it.
  narrow.reset();
  auto roomy = open_engine_with_context(gguf.string(), store, 0);
  auto reopened = engine::Session::open(roomy, "long-opening");
  CHECK(reopened->messages()[0].text == prompt);
  engine::TurnStats stats;
  reopened->prepare(stats);
  CHECK(greedy_turn(*reopened, "Once", 4).generated_tokens == 4);
}

TEST_CASE("a file whose system prompt was edited and whose messages keep their ids is refused") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::int8);
  for (const char* chat_template : {"raw", "llama2", "chatml", "zephyr", "mistral"}) {
    CAPTURE(chat_template);
    const auto original = conversation(engine, chat_template, "original");
    const Json exported = Json::parse(original->export_json());
    // As it was written, it is taken back, the prompt's ids counted as the original's.
    check_same_messages(*original, *engine::Session::import_json(engine, exported.dump(), "same"));

    Json edited = exported;
    edited["system_prompt"] = "Lily is happy.";
    edited["messages"][0]["text"] = "Lily is happy.";
    const auto [status, message] = import_error(engine, edited.dump(), "edited");
    CHECK(status == Status::invalid_argument);
    CAPTURE(message);
    CHECK(holds(message, "system prompt is not the one the messages' tokens begin with"));
    CHECK(holds(message, "leave out the messages' \"tokens\""));
    // Without them, the conversation is tokenized anew with the edited prompt.
    for (auto& m : edited["messages"]) m.erase("tokens");
    const auto anew = engine::Session::import_json(engine, edited.dump(), "anew");
    CHECK(anew->messages()[0].text == "Lily is happy.");
    CHECK(anew->messages()[0].n_tokens > 0);
    engine::Session fresh(engine, session_options("Lily is happy.", chat_template));
    fresh.add_exchange(anew->messages()[1].text, anew->messages()[2].text);
    REQUIRE(anew->tokens().size() > fresh.tokens().size());
    CHECK(std::equal(fresh.tokens().begin(), fresh.tokens().end(), anew->tokens().begin()));
  }
}
