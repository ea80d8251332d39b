// json-format: what holding replies to JSON (PARLEY_FORMAT_JSON) costs per generated token:
// the walk over the model's vocabulary that finds the tokens allowed next, in the states a
// reply passes through (without a schema and with one), and the one-time sort of the
// vocabulary. One thread.
#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "scenarios.h"
#include "text/json_schema.h"
#include "text/schema_prefix.h"

namespace parley::bench {
namespace {

// Replies so far, each in a state that allows a different share of the vocabulary.
struct ReplyState {
  const char* name;
  const char* text;
  bool schema;  // held to kSchema
};
// A game character, as a JSON Schema.
constexpr const char* kSchema =
    R"({"properties": {"name": {"type": "string"}, "level": {"type": "integer"},
        "mood": {"enum": ["happy", "sad", "angry", "afraid"]}, "alive": {"type": "boolean"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "required": ["name", "level", "mood"]})";
constexpr ReplyState kStates[] = {
    {"key", "{", false},                                 // a key's quote or '}'
    {"string", "{\"story\": \"Once upon a time", false},  // most tokens go
    {"number", "{\"a\": 12", false},
    {"value", "{\"a\": ", false},                        // any value's start
    {"after-value", "{\"a\": \"x\"", false},             // ',' or '}'
    {"schema-key", "{\"name\": \"Bo\", ", true},          // the next key, spelled out
    {"schema-string", "{\"name\": \"Once upon", true},    // as without a schema
    {"schema-integer", "{\"name\": \"Bo\", \"level\": 1", true},
    {"schema-enum", "{\"name\": \"Bo\", \"level\": 1, \"mood\": \"", true},
    {"schema-choice", "{\"name\": \"Bo\", \"level\": 1, \"mood\": \"sad\", \"note\": ", true},
};
constexpr double kMinSeconds = 0.2;

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

void run_json_format(BenchContext& ctx) {
  for (kv::KvType kv : ctx.kv_types(kDefaultKvType)) {
    const auto engine = ctx.make_engine(kv);
    auto start = std::chrono::steady_clock::now();
    const engine::JsonVocabulary& vocabulary = engine->json_vocabulary();
    const double build_ms = ms_since(start);
    std::vector<uint8_t> allowed(size_t(engine->tokenizer().n_vocab()));
    const auto schema = text::JsonSchema::compile(kSchema);
    for (const ReplyState& state : kStates) {
      text::SchemaPrefix prefix(state.schema ? schema.get() : nullptr);
      require(prefix.feed(std::string_view(state.text)), Status::internal,
              std::string("json-format: the state \"") + state.name + "\" is not JSON's");
      // Passes until kMinSeconds have gone by, at least three; the median pass.
      std::vector<double> passes;
      start = std::chrono::steady_clock::now();
      while (passes.size() < 3 || ms_since(start) < kMinSeconds * 1000) {
        const auto pass = std::chrono::steady_clock::now();
        vocabulary.allowed(prefix, allowed);
        passes.push_back(ms_since(pass));
      }
      std::nth_element(passes.begin(), passes.begin() + ptrdiff_t(passes.size() / 2),
                       passes.end());
      nlohmann::ordered_json line = ctx.line("json-format", *engine);
      line["state"] = state.name;
      line["reply_so_far"] = state.text;
      line["json_schema"] = state.schema ? nlohmann::ordered_json(kSchema) : nullptr;
      line["mask_ms"] = passes[passes.size() / 2];
      line["allowed_tokens"] = std::count(allowed.begin(), allowed.end(), uint8_t{1});
      line["vocabulary_tokens"] = allowed.size();
      line["vocabulary_sort_ms"] = build_ms;
      ctx.write(line);
    }
  }
}

}  // namespace parley::bench
