// JsonSchema and SchemaPrefix: which schemas compile (and the errors of those that do not),
// which texts a schema's prefix takes, and that every text it takes goes on to an object that
// both nlohmann's parser and a validator written from the JSON Schema keywords accept.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "text/json_schema.h"
#include "text/schema_prefix.h"

namespace parley::text {
namespace {

using Json = nlohmann::json;

// A game character: every kind of place a schema has.
const char* const kCharacter = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "title": "Name"},
    "age": {"type": "integer"},
    "mood": {"enum": ["happy", "sad", null, 3]},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    "pos": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"], "additionalProperties": false},
    "alive": {"type": "boolean"},
    "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
  },
  "required": ["name", "age", "pos"]
})";

// As pydantic writes a model with a nested model, a str enum and an Optional field.
const char* const kInventory = R"({
  "$defs": {
    "Item": {"type": "object", "title": "Item",
             "properties": {"id": {"type": "integer"}, "kind": {"$ref": "#/$defs/Kind"}},
             "required": ["id", "kind"]},
    "Kind": {"enum": ["sword", "shield"], "type": "string", "title": "Kind"}
  },
  "properties": {
    "items": {"items": {"$ref": "#/$defs/Item"}, "type": "array", "title": "Items"},
    "owner": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
  },
  "required": ["items"], "title": "Inventory", "type": "object"
})";

const char* const kMap = R"({"type": "object", "additionalProperties": {"type": "integer"}})";
const char* const kAnyObject = R"({})";
const char* const kRootLiterals = R"({"enum": [{"a": 1}, {"a": 12}, "not an object"]})";
const char* const kNumberLiterals =
    R"({"properties": {"v": {"type": "array", "items": {"enum": [1, 12, -0.5]}}},
        "required": ["v"]})";
const char* const kOptionalOrder =
    R"({"properties": {"a": {"type": "null"}, "b": {"type": "null"}, "c": {"type": "null"}},
        "required": ["b"]})";
const char* const kEmptyArray =
    R"({"properties": {"e": {"type": "array", "items": false}}, "required": ["e"]})";
const char* const kTypeList =
    R"({"properties": {"v": {"type": ["integer", "string", "null"]},
                       "w": {"type": ["number", "integer"]},
                       "k": {"type": "string", "enum": ["a", 1, "b\"\n\u00e9"]},
                       "free": true, "never": false},
        "required": ["v", "w"]})";

const char* const kSchemas[] = {kCharacter, kInventory,  kMap,       kAnyObject,
                                kRootLiterals, kNumberLiterals, kOptionalOrder, kEmptyArray,
                                kTypeList};

// How far a schema's prefix takes `text`: the bytes taken, and whether the object closed.
struct Taken {
  size_t bytes = 0;
  bool complete = false;
};

Taken take(const JsonSchema& schema, std::string_view text) {
  SchemaPrefix p(&schema);
  Taken t;
  for (const char c : text) {
    SchemaPrefix next = p;
    if (!next.feed(static_cast<uint8_t>(c))) return t;
    p = next;
    ++t.bytes;
  }
  t.complete = p.complete();
  return t;
}

bool accepts(const char* schema_text, const std::string& doc) {
  const auto schema = JsonSchema::compile(schema_text);
  const Taken t = take(*schema, doc);
  return t.bytes == doc.size() && t.complete;
}

// Where the prefix first refuses `doc`, or doc.size() when it takes it all.
size_t refused_at(const char* schema_text, const std::string& doc) {
  return take(*JsonSchema::compile(schema_text), doc).bytes;
}

// Validation written from the JSON Schema keywords (the subset), on nlohmann's parse: a
// reading of the schema independent of the byte automaton.
bool valid(const Json& v, const Json& s, const Json& root);

bool valid_type(const Json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && v.get<double>() == std::trunc(v.get<double>()));
  }
  if (t == "boolean") return v.is_boolean();
  return v.is_null();
}

bool valid(const Json& v, const Json& s, const Json& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    return valid(v, root.at(Json::json_pointer(s["$ref"].get<std::string>().substr(1))), root);
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    int passing = 0;
    for (const Json& branch : s[key]) passing += valid(v, branch, root);
    if (passing == 0 || (std::string(key) == "oneOf" && passing > 1)) return false;
  }
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum") &&
      std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) {
    return false;
  }
  if (s.contains("type")) {
    const Json types = s["type"].is_array() ? s["type"] : Json::array({s["type"]});
    if (std::none_of(types.begin(), types.end(),
                     [&](const Json& t) { return valid_type(v, t.get<std::string>()); })) {
      return false;
    }
  }
  if (v.is_object()) {
    for (const auto& name : s.value("required", Json::array())) {
      if (!v.contains(name.get<std::string>())) return false;
    }
    const Json properties = s.value("properties", Json::object());
    for (const auto& [key, value] : v.items()) {
      if (properties.contains(key)) {
        if (!valid(value, properties[key], root)) return false;
      } else if (s.contains("additionalProperties") &&
                 !valid(value, s["additionalProperties"], root)) {
        return false;
      }
    }
  }
  if (v.is_array()) {
    if (v.size() < s.value("minItems", size_t{0})) return false;
    if (v.size() > s.value("maxItems", SIZE_MAX)) return false;
    if (s.contains("items")) {
      for (const Json& item : v) {
        if (!valid(item, s["items"], root)) return false;
      }
    }
  }
  return true;
}

TEST_CASE("a character's schema takes its objects and refuses at the first byte that breaks it") {
  for (const char* doc : {
           R"({"name":"Bo","age":3,"pos":{"x":1.5,"y":-2e3}})",
           R"({ "name" : "Bo" , "age" : -0 , "mood":"sad", "tags":["a"], "pos":{"x":0,"y":0},
               "alive":true, "note":null})",
           R"({"name":"","age":10,"mood":3,"tags":["a","b","c"],"pos":{"x":1,"y":2},"note":"x"})",
           R"({"name":"Bo","age":1,"mood":null,"pos":{"x":1,"y":2},"alive":false})",
       }) {
    CAPTURE(doc);
    CHECK(accepts(kCharacter, doc));
  }
  struct Case {
    std::string doc;
    size_t at;  // the index of the byte refused
  };
  const std::string head = R"({"name":"Bo","age":3)";
  const std::string with_pos = head + R"(,"pos":{"x":1,"y":2})";
  for (const Case& c : std::vector<Case>{
           {R"({"age":3})", 2},                    // a required property comes first
           {R"({"name":"Bo","age":3.5})", 20},     // an integer has no fraction
           {R"({"name":"Bo","age":1e3})", 20},     // nor an exponent
           {head + "}", head.size()},              // pos is required
           {head + R"(,"pos":{"x":1,"y":2},"tags":["a"]})", head.size() + 22},  // order
           {head + R"(,"tags":[])", head.size() + 9},             // minItems
           {head + R"(,"tags":["a","b","c","d"])", head.size() + 20},  // maxItems
           {head + R"(,"mood":"hap!")", head.size() + 12},         // enum, byte by byte
           {head + R"(,"mood":30)", head.size() + 9},              // 3 is whole
           {head + R"(,"extra":1)", head.size() + 2},              // unlisted
           {head + R"(,"note":null)", head.size() + 2},  // after the required pos
           {with_pos + R"(,"note":5)", with_pos.size() + 8},  // anyOf's branches
           {with_pos + R"(,"alive":"yes")", with_pos.size() + 9},
           {head + R"(,"pos":{"x":1}})", head.size() + 13},        // nested required
           {head + R"(,"pos":{"x":1,"y":2,"z":3}})", head.size() + 19},  // no more
           {R"([])", 0},
       }) {
    CAPTURE(c.doc);
    CHECK(refused_at(kCharacter, c.doc) == c.at);
  }
}

TEST_CASE("pydantic's shapes: $defs references, a str enum and an Optional field") {
  CHECK(accepts(kInventory, R"({"items":[{"id":1,"kind":"sword"},{"id":2,"kind":"shield"}]})"));
  CHECK(accepts(kInventory, R"({"items":[],"owner":null})"));
  CHECK(accepts(kInventory, R"({"items":[],"owner":"Ann"})"));
  CHECK(refused_at(kInventory, R"({"items":[{"id":1,"kind":"axe"}]})") == 26);
  CHECK(refused_at(kInventory, R"({"items":[{"id":1}]})") == 17);
  CHECK(refused_at(kInventory, R"({"owner":null})") == 2);
}

TEST_CASE("objects that list no properties take any keys, their values as the schema says") {
  CHECK(accepts(kMap, R"({"a":1,"b":-2})"));
  CHECK(accepts(kMap, R"({})"));
  CHECK(refused_at(kMap, R"({"a":"x"})") == 5);
  CHECK(refused_at(kMap, R"({"a":1.0})") == 6);
  CHECK(accepts(kAnyObject, R"({"a":[1,{"b":null}],"c":"d"})"));
  CHECK(refused_at(kAnyObject, R"([1])") == 0);
}

TEST_CASE("enum values are read byte by byte, numbers ending at the byte after them") {
  CHECK(accepts(kRootLiterals, R"({"a":1})"));
  CHECK(accepts(kRootLiterals, R"({"a":12})"));
  CHECK(refused_at(kRootLiterals, R"({"a": 1})") == 5);  // compact JSON only
  CHECK(refused_at(kRootLiterals, R"({"a":123})") == 7);
  CHECK(accepts(kNumberLiterals, R"({"v":[1,12,1,-0.5]})"));
  CHECK(accepts(kNumberLiterals, R"({"v":[ 12 , 1 ]})"));
  CHECK(refused_at(kNumberLiterals, R"({"v":[13]})") == 7);
  CHECK(refused_at(kNumberLiterals, R"({"v":[1.0]})") == 7);
  CHECK(refused_at(kNumberLiterals, R"({"v":[-0.50]})") == 10);
}

TEST_CASE("optional properties may be left out, but never come after a later one") {
  CHECK(accepts(kOptionalOrder, R"({"b":null})"));
  CHECK(accepts(kOptionalOrder, R"({"a":null,"b":null,"c":null})"));
  CHECK(accepts(kOptionalOrder, R"({"b":null,"c":null})"));
  CHECK(refused_at(kOptionalOrder, R"({"c":null})") == 2);   // b is required before c
  CHECK(refused_at(kOptionalOrder, R"({})") == 1);
  CHECK(refused_at(kOptionalOrder, R"({"a":null})") == 9);
  CHECK(refused_at(kOptionalOrder, R"({"b":null,"a":null})") == 11);
  CHECK(refused_at(kOptionalOrder, R"({"a":null,"b":null,"c":null,)") == 27);
}

TEST_CASE("items false asks for an empty array; types listed start differently") {
  CHECK(accepts(kEmptyArray, R"({"e":[]})"));
  CHECK(refused_at(kEmptyArray, R"({"e":[1]})") == 6);
  CHECK(accepts(kTypeList, R"({"v":1,"w":2.5})"));
  CHECK(accepts(kTypeList, R"({"v":"s","w":-3,"k":"a"})"));
  CHECK(accepts(kTypeList, "{\"v\":null,\"w\":0,\"k\":\"b\\\"\\n\xc3\xa9\",\"free\":[{}]}"));
  CHECK(refused_at(kTypeList, R"({"v":true})") == 5);
  CHECK(refused_at(kTypeList, R"({"v":1,"w":2,"k":1})") == 17);  // enum filtered by type
  CHECK(refused_at(kTypeList, R"({"v":1,"w":2,"never":1})") == 14);
}

TEST_CASE("without a schema the prefix is JsonPrefix") {
  const std::string doc = R"({"anything":[1,"x",{"y":null}]})";
  SchemaPrefix p;
  CHECK(p.feed(doc));
  CHECK(p.complete());
  SchemaPrefix q;
  CHECK_FALSE(q.feed(std::string_view("[1]")));
}

struct Refusal {
  const char* schema;
  Status status;
  const char* says;  // in the message
};

TEST_CASE("schemas outside the subset, malformed or unsatisfiable are refused by name") {
  std::string deep = R"({"type":"object"})";
  for (int i = 0; i < 40; ++i) deep = R"({"properties":{"a":)" + deep + R"(},"required":["a"]})";
  const std::string big(JsonSchema::kMaxTextBytes + 1, ' ');
  // A value too deep to dump recursively (nlohmann's parser reads it without recursion).
  const std::string deep_value = R"({"properties":{"a":{"const":)" + std::string(200000, '[') +
                                 std::string(200000, ']') + "}}}";
  const std::vector<std::pair<std::string, Refusal>> cases = {
      {"not json", {"", Status::invalid_argument, "json_schema is not JSON"}},
      {"[1]", {"", Status::invalid_argument, "a schema is an object, true or false, not array"}},
      {R"({"type":"string"})", {"", Status::invalid_argument, "no object satisfies"}},
      {"false", {"", Status::invalid_argument, "no value satisfies"}},
      {R"({"properties":{"a":{"minLength":1}}})",
       {"", Status::unsupported, "json_schema at \"/properties/a\": \"minLength\""}},
      {R"({"properties":{"a/b~":{"pattern":"x"}}})",
       {"", Status::unsupported, "\"/properties/a~1b~0\""}},
      {R"({"allOf":[{}]})", {"", Status::unsupported, "\"allOf\" (all of several schemas)"}},
      {R"({"type":"strin"})", {"", Status::invalid_argument, "\"strin\" is not a type"}},
      {R"({"$ref":"#/$defs/A","$defs":{"A":{"properties":{"x":{"$ref":"#/$defs/A"}}}}})",
       {"", Status::unsupported, "recursive"}},
      {R"({"$ref":"https://example.com/s.json"})", {"", Status::unsupported, "within the schema"}},
      {R"({"$ref":"#/nope"})", {"", Status::invalid_argument, "names no place"}},
      {R"({"$ref":"#/$defs/A","title":"t","type":"object"})",
       {"", Status::unsupported, "\"$ref\" beside \"type\""}},
      {R"({"properties":{"v":{"anyOf":[{"type":"string"},{"enum":["a"]}]}}})",
       {"", Status::unsupported, "branches 0 and 1 can both be a string"}},
      {R"({"properties":{"v":{"oneOf":[{"type":"integer"},{"type":"number"}]}}})",
       {"", Status::unsupported, "can both be a number"}},
      {R"({"required":["x"],"additionalProperties":false})",
       {"", Status::invalid_argument, "forbids"}},
      {R"({"required":["x"]})", {"", Status::unsupported, "does not list"}},
      {R"({"properties":{"v":{"type":"array","minItems":3,"maxItems":2}},"required":["v"]})",
       {"", Status::invalid_argument,
        "no value satisfies the schema (at \"/properties/v\": \"minItems\" is above"}},
      {R"({"properties":{"v":{"maxItems":-1}}})",
       {"", Status::invalid_argument, "\"maxItems\" must be a non-negative integer"}},
      {R"({"properties":{"v":{"items":[{}]}}})", {"", Status::unsupported, "tuples"}},
      {R"({"properties":{"v":{"uniqueItems":true}}})", {"", Status::unsupported, "uniqueItems"}},
      {R"({"properties":{"v":{"enum":[]}},"required":["v"]})",
       {"", Status::invalid_argument, "(at \"/properties/v\": \"enum\" is empty)"}},
      {R"({"properties":{"v":{"type":"string","enum":[1]}},"required":["v"]})",
       {"", Status::invalid_argument, "no value of \"enum\" or \"const\" has its type"}},
      {R"({"properties":{"v":{"enum":{}}}})", {"", Status::invalid_argument, "must be an array"}},
      {R"({"properties":{"v":{"anyOf":[]}}})", {"", Status::invalid_argument, "non-empty"}},
      {R"({"required":["a","a"],"properties":{"a":{}}})",
       {"", Status::invalid_argument, "lists \"a\" twice"}},
      {R"({"properties":{"a":false},"required":["a"]})",
       {"", Status::invalid_argument, "\"a\" accepts no value"}},
      {R"({"properties":{"a":{"type":"array","items":false,"minItems":1}},"required":["a"]})",
       {"", Status::invalid_argument, "\"items\" accepts no value"}},
      {R"({"properties":{"v":{"oneOf":[{"items":{"type":"string"}},{"type":"string"}]}}})",
       {"", Status::unsupported, "a branch without \"type\" takes values of every kind"}},
      {R"({"properties":{"a":{"$id":"https://example.com/a","type":"object"}}})",
       {"", Status::unsupported, "\"$id\" below the schema's root"}},
      {R"({"properties":{"a":{"enum":[12345678901234567890123]}}})",
       {"", Status::unsupported, "2^63 or more"}},
      {R"({"properties":{"a":{"type":"array","maxItems":70000}}})",
       {"", Status::unsupported, "\"maxItems\" above 65534"}},
      {R"({"properties":{"w":{"$ref":"#/required/99999999999999999999999"}},"required":[]})",
       {"", Status::invalid_argument, "is not a JSON pointer into the schema"}},
      {R"({"properties":{"w":{"$ref":"#node"}}})", {"", Status::unsupported, "within the schema"}},
      {deep, {"", Status::unsupported, "nest deeper than 32"}},
      {big, {"", Status::invalid_argument, "at most 1048576"}},
      {deep_value, {"", Status::unsupported, "nest deeper than 32"}},
  };
  for (const auto& [schema, refusal] : cases) {
    CAPTURE(schema.substr(0, 200));
    try {
      JsonSchema::compile(schema);
      FAIL("compiled");
    } catch (const Error& e) {
      CHECK(e.status() == refusal.status);
      CHECK_MESSAGE(std::string(e.what()).find(refusal.says) != std::string::npos, e.what());
    }
  }
}

TEST_CASE("what no value satisfies is left out where it may be; keywords about arrays alone") {
  // Properties listed are the only ones, also when no value satisfies them.
  const char* const kNone = R"({"properties":{"a":false},"additionalProperties":{}})";
  CHECK(accepts(kNone, "{}"));
  CHECK(refused_at(kNone, R"({"a":1})") == 1);
  CHECK(refused_at(kNone, R"({"x":1})") == 1);
  const char* const kOptional =
      R"({"properties":{"opt":{"type":"array","minItems":3,"maxItems":1},"b":{"type":"null"}},
          "required":["b"]})";
  CHECK(accepts(kOptional, R"({"b":null})"));
  CHECK(refused_at(kOptional, R"({"opt":[]})") == 2);
  const char* const kBranch =
      R"({"properties":{"v":{"anyOf":[{"type":"object","properties":{"a":false},
          "required":["a"]},{"type":"integer"}]}},"required":["v"]})";
  CHECK(accepts(kBranch, R"({"v":3})"));
  CHECK(refused_at(kBranch, R"({"v":{})") == 5);
  // An array's keywords without "type" say nothing of objects: the root takes any object.
  CHECK(accepts(R"({"items":{"type":"string"},"minItems":2})", R"({"x":[1]})"));
  // anyOf takes a branch without "type" (any value it writes satisfies the anyOf).
  CHECK(accepts(R"({"properties":{"v":{"anyOf":[{"items":{"type":"string"}},{"type":"null"}]}}})",
                R"({"v":["a"]})"));
  // Counts may be written as whole floats; the root's $id is its own.
  CHECK(accepts(R"({"$id":"https://example.com/s","properties":{"v":{"type":"array",
                   "minItems":1.0,"maxItems":2.0}},"required":["v"]})",
                R"({"v":[1,2]})"));
}

TEST_CASE("annotations and keywords JSON Schema does not define are no refusal") {
  const auto schema = JsonSchema::compile(
      R"({"$schema":"https://json-schema.org/draft/2020-12/schema","title":"T",
          "description":"d","x-order":1,"properties":{"a":{"type":"string","format":"date",
          "examples":["x"],"deprecated":false,"uniqueItems":false}},"required":["a"]})");
  CHECK(take(*schema, R"({"a":"x"})").complete);
  // Beside the keywords that take no others, too.
  CHECK(accepts(R"({"properties":{"a":{"const":"x","x-extra":1},"b":{"$ref":"#/$defs/B",
                   "x-note":"y"},"c":{"anyOf":[{"type":"null"}],"x-order":2}},
                   "required":["a","b","c"],"$defs":{"B":{"type":"boolean"}}})",
                R"({"a":"x","b":true,"c":null})"));
}

// Bytes a random generator picks among those the prefix takes, leaning to the ones that
// close what is open as the text grows, so that walks end.
std::string random_walk(const JsonSchema& schema, std::mt19937& rng, bool& stuck) {
  SchemaPrefix p(&schema);
  std::string text;
  stuck = false;
  static const std::string kClosing = "\"}]0,tn:";
  while (!p.complete() && text.size() < 4000) {
    std::vector<uint8_t> allowed;
    for (int c = 0; c < 256; ++c) {
      SchemaPrefix next = p;
      if (next.feed(uint8_t(c))) allowed.push_back(uint8_t(c));
    }
    if (allowed.empty()) {
      stuck = true;
      return text;
    }
    uint8_t c = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    const double lean = std::min(0.95, double(text.size()) / 200.0);
    if (std::uniform_real_distribution<double>(0, 1)(rng) < lean) {
      for (const char k : kClosing) {
        if (std::find(allowed.begin(), allowed.end(), uint8_t(k)) != allowed.end()) {
          c = uint8_t(k);
          break;
        }
      }
    }
    REQUIRE(p.feed(c));
    text += char(c);
  }
  return text;
}

TEST_CASE("every text a schema's prefix takes goes on to an object the schema accepts") {
  std::mt19937 rng(20261207);
  for (const char* schema_text : kSchemas) {
    CAPTURE(schema_text);
    const auto schema = JsonSchema::compile(schema_text);
    const Json schema_json = Json::parse(schema_text);
    int whole = 0;
    for (int walk = 0; walk < 150; ++walk) {
      bool stuck = false;
      const std::string text = random_walk(*schema, rng, stuck);
      CAPTURE(text);
      REQUIRE_FALSE(stuck);
      if (text.size() >= 4000) continue;
      ++whole;
      Json doc;
      try {
        doc = Json::parse(text);
      } catch (const Json::out_of_range&) {
        continue;  // a number beyond a double's range: JSON, which nlohmann does not read
      }
      CHECK(doc.is_object());
      CHECK(valid(doc, schema_json, schema_json));
    }
    CHECK(whole > 100);
  }
}

}  // namespace
}  // namespace parley::text
