#include "text/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>

#include "common/error.h"

namespace parley::text {
namespace {

// Ordered: properties are generated in the order the schema lists them.
using Json = nlohmann::ordered_json;
using NodeId = std::optional<uint16_t>;  // nullopt: the schema accepts no value

// Keywords that only describe.
const std::set<std::string, std::less<>> kAnnotations = {
    "$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "$vocabulary", "title",
    "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "format",
    "contentMediaType", "contentEncoding", "contentSchema"};
// Keywords that constrain values in ways generation does not follow, with what they do.
const std::map<std::string, std::string, std::less<>> kUnsupported = {
    {"allOf", "all of several schemas"},
    {"not", "a schema's negation"},
    {"if", "conditions"},
    {"then", "conditions"},
    {"else", "conditions"},
    {"dependentRequired", "properties that depend on others"},
    {"dependentSchemas", "properties that depend on others"},
    {"dependencies", "properties that depend on others"},
    {"patternProperties", "properties named by a pattern"},
    {"propertyNames", "rules on property names"},
    {"unevaluatedProperties", "unevaluated properties"},
    {"unevaluatedItems", "unevaluated items"},
    {"prefixItems", "tuples"},
    {"additionalItems", "tuples"},
    {"contains", "arrays that must contain a value"},
    {"minContains", "arrays that must contain a value"},
    {"maxContains", "arrays that must contain a value"},
    {"minProperties", "counts of properties"},
    {"maxProperties", "counts of properties"},
    {"minLength", "string lengths"},
    {"maxLength", "string lengths"},
    {"pattern", "string patterns"},
    {"minimum", "number ranges"},
    {"maximum", "number ranges"},
    {"exclusiveMinimum", "number ranges"},
    {"exclusiveMaximum", "number ranges"},
    {"multipleOf", "multiples"},
    {"$dynamicRef", "dynamic references"},
    {"$recursiveRef", "dynamic references"}};
// The keywords this subset follows; any other (not an annotation, not refused) is unknown to
// JSON Schema and ignored.
const std::set<std::string, std::less<>> kFollowed = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items",
    "minItems", "maxItems", "anyOf", "oneOf", "$ref"};
const std::set<std::string, std::less<>> kObjectKeywords = {"properties", "required",
                                                            "additionalProperties"};
const std::set<std::string, std::less<>> kArrayKeywords = {"items", "minItems", "maxItems"};
const std::set<std::string, std::less<>> kTypeNames = {"object", "array",  "string", "number",
                                                       "integer", "boolean", "null"};

// A place in the schema document as a JSON pointer (RFC 6901).
std::string child_at(const std::string& at, std::string_view key) {
  std::string out = at + "/";
  for (const char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string where(const std::string& at) {
  return at.empty() ? std::string("json_schema") : "json_schema at \"" + at + "\"";
}

[[noreturn]] void invalid(const std::string& at, const std::string& what) {
  fail(Status::invalid_argument, where(at) + ": " + what);
}
[[noreturn]] void unsupported(const std::string& at, const std::string& what) {
  fail(Status::unsupported, where(at) + ": " + what);
}

// How deeply containers nest in `value`, counted up to `cap` + 1 at most: without recursion,
// as a value a megabyte deep would overflow the stack (so would dumping it, which waits for
// this check).
int nesting_of(const Json& value, int cap) {
  std::vector<std::pair<const Json*, int>> open = {{&value, 0}};
  int deepest = 0;
  while (!open.empty()) {
    const auto [v, depth] = open.back();
    open.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    if (deepest > cap) return deepest;
    for (const Json& child : *v) open.emplace_back(&child, depth + 1);
  }
  return deepest;
}

// Whether `value` holds a number nlohmann keeps as a double that is whole and past 64-bit
// integers: written back, a long integer would come out rounded, unequal to the schema's.
bool holds_huge_number(const Json& value) {
  std::vector<const Json*> open = {&value};
  while (!open.empty()) {
    const Json* v = open.back();
    open.pop_back();
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (std::trunc(d) == d && std::fabs(d) >= 9.2233720368547758e18) return true;
    }
    if (v->is_structured()) {
      for (const Json& child : *v) open.push_back(&child);
    }
  }
  return false;
}

bool has_type(const Json& value, std::string_view type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  // JSON Schema: a number without a fraction, 1.0 included.
  if (value.is_number_integer()) return true;
  return value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>();
}

// A count keyword's value (JSON Schema takes 2.0 for 2), at most UINT32_MAX.
uint32_t count_of(const Json& s, const char* keyword, const std::string& at) {
  const Json& v = s.at(keyword);
  const bool whole = v.is_number_integer() ||
                     (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
  if (!whole || v.get<double>() < 0) {
    invalid(at, std::string("\"") + keyword + "\" must be a non-negative integer");
  }
  const double n = v.get<double>();
  return n >= double(UINT32_MAX) ? UINT32_MAX : static_cast<uint32_t>(v.get<uint64_t>());
}

}  // namespace

class JsonSchemaCompiler {
 public:
  explicit JsonSchemaCompiler(const Json& document) : document_(document) {}

  std::shared_ptr<const JsonSchema> run() {
    const NodeId root = compile(document_, "", 0);
    if (!root) {
      invalid("", "no value satisfies the schema" +
                      (why_nothing_.empty() ? std::string() : " (" + why_nothing_ + ")"));
    }
    schema_.root_ = object_root(*root);
    return std::make_shared<const JsonSchema>(std::move(schema_));
  }

 private:
  using Node = JsonSchema::Node;
  using Kind = JsonSchema::Kind;
  using Start = JsonSchema::Start;
  static constexpr int kMaxSchemaNesting = 64;

  NodeId compile(const Json& s, const std::string& at, int nesting) {
    if (nesting > kMaxSchemaNesting) {
      unsupported(at, "schemas nest deeper than " + std::to_string(kMaxSchemaNesting));
    }
    if (s.is_boolean()) return s.get<bool>() ? NodeId(scalar(Kind::any)) : std::nullopt;
    if (!s.is_object()) invalid(at, std::string("a schema is an object, true or false, not ") +
                                        s.type_name());
    std::vector<std::string> validating;  // the keywords followed
    for (const auto& [key, value] : s.items()) {
      if (kAnnotations.count(key)) continue;
      const auto refused = kUnsupported.find(key);
      if (refused != kUnsupported.end()) {
        unsupported(at, "\"" + key + "\" (" + refused->second + ") is not supported");
      }
      if (key == "uniqueItems") {
        if (!value.is_boolean()) invalid(at, "\"uniqueItems\" must be true or false");
        if (value.get<bool>()) unsupported(at, "\"uniqueItems\": true is not supported");
        continue;
      }
      if (kFollowed.count(key)) validating.push_back(key);
    }
    // Below the root, an $id starts another document, against which its "#..." references
    // would resolve.
    if (s.contains("$id") && &s != &document_) {
      unsupported(at, "\"$id\" below the schema's root (another document) is not supported");
    }
    const auto only = [&](std::string_view keyword, const std::set<std::string_view>& beside) {
      for (const std::string& k : validating) {
        if (k != keyword && !beside.count(k)) {
          unsupported(at, "\"" + std::string(keyword) + "\" beside \"" + k + "\" is not supported");
        }
      }
    };
    if (s.contains("$ref")) {
      only("$ref", {});
      return reference(s.at("$ref"), at, nesting);
    }
    const bool any_of = s.contains("anyOf"), one_of = s.contains("oneOf");
    if (any_of || one_of) {
      const char* keyword = any_of ? "anyOf" : "oneOf";
      only(keyword, {});
      return branches(s.at(keyword), child_at(at, keyword), nesting, one_of && !any_of);
    }
    if (s.contains("enum") || s.contains("const")) {
      if (s.contains("enum") && s.contains("const")) {
        unsupported(at, "\"enum\" beside \"const\" is not supported");
      }
      only(s.contains("enum") ? "enum" : "const", {"type"});
      return literals(s, at);
    }
    return typed(s, at, nesting);
  }

  // A schema no value satisfies: dropped where it is an optional property or a branch; the
  // first reason found explains a root that nothing satisfies.
  NodeId nothing(const std::string& at, const std::string& why) {
    if (why_nothing_.empty()) why_nothing_ = (at.empty() ? "" : "at \"" + at + "\": ") + why;
    return std::nullopt;
  }

  NodeId reference(const Json& ref, const std::string& at, int nesting) {
    if (!ref.is_string()) invalid(at, "\"$ref\" must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#' || target.find('%') != std::string::npos ||
        (target.size() > 1 && target[1] != '/')) {
      unsupported(at, "\"$ref\": \"" + target + "\" is not supported: only references within "
                      "the schema (\"#/$defs/Name\") are");
    }
    if (const auto done = refs_done_.find(target); done != refs_done_.end()) return done->second;
    if (!refs_open_.insert(target).second) {
      unsupported(at, "\"$ref\": \"" + target + "\" refers to a schema that holds it (recursive "
                      "schemas are not supported)");
    }
    const std::string pointer_text = target.substr(1);
    const Json* referred = nullptr;
    try {
      const Json::json_pointer pointer(pointer_text);
      if (document_.contains(pointer)) referred = &document_.at(pointer);
    } catch (const Json::exception& e) {
      invalid(at, "\"$ref\": \"" + target + "\" is not a JSON pointer into the schema (" +
                      e.what() + ")");
    }
    if (!referred) invalid(at, "\"$ref\": \"" + target + "\" names no place in the schema");
    const NodeId id = compile(*referred, pointer_text, nesting + 1);
    refs_open_.erase(target);
    refs_done_.emplace(target, id);
    return id;
  }

  NodeId branches(const Json& list, const std::string& at, int nesting, bool one_of) {
    if (!list.is_array() || list.empty()) invalid(at, "must be a non-empty array of schemas");
    JsonSchema::Choice table;
    table.fill(JsonSchema::kNone);
    std::array<size_t, JsonSchema::kStarts> branch_of{};
    std::vector<uint16_t> alive;
    for (size_t i = 0; i < list.size(); ++i) {
      const NodeId id = compile(list[i], child_at(at, std::to_string(i)), nesting + 1);
      if (!id) continue;
      alive.push_back(*id);
      const JsonSchema::Choice starts = starts_of(*id);
      for (size_t k = 0; k < JsonSchema::kStarts; ++k) {
        if (starts[k] == JsonSchema::kNone) continue;
        if (table[k] != JsonSchema::kNone) {
          unsupported(at, "branches " + std::to_string(branch_of[k]) + " and " +
                              std::to_string(i) + " can both be " + start_name(Start(k)) +
                              " (branches must differ in how their values start)");
        }
        table[k] = starts[k];
        branch_of[k] = i;
      }
    }
    if (alive.empty()) return nothing(at, "no branch accepts a value");
    if (alive.size() == 1) return alive[0];
    const bool narrowed = std::any_of(alive.begin(), alive.end(),
                                      [&](uint16_t id) { return bool(narrowed_[id]); });
    if (narrowed && one_of) {
      unsupported(at, "a branch without \"type\" takes values of every kind, so \"oneOf\" "
                      "cannot keep to one branch by how a value starts (give each a \"type\", "
                      "or use \"anyOf\")");
    }
    const uint16_t id = choice(table);
    narrowed_[id] = narrowed;
    return id;
  }

  NodeId literals(const Json& s, const std::string& at) {
    std::vector<const Json*> values;
    if (s.contains("const")) {
      values.push_back(&s.at("const"));
    } else {
      const Json& list = s.at("enum");
      if (!list.is_array()) invalid(at, "\"enum\" must be an array");
      for (const Json& v : list) values.push_back(&v);
    }
    const std::vector<std::string> types = s.contains("type") ? type_names(s, at)
                                                              : std::vector<std::string>{};
    JsonSchema::LiteralSet set;
    int deepest = 0;
    for (const Json* v : values) {
      if (!types.empty() && std::none_of(types.begin(), types.end(),
                                         [&](const std::string& t) { return has_type(*v, t); })) {
        continue;
      }
      const int nesting = nesting_of(*v, JsonSchema::kMaxContainerDepth);
      if (nesting > JsonSchema::kMaxContainerDepth) {
        unsupported(at, "objects and arrays nest deeper than " +
                            std::to_string(JsonSchema::kMaxContainerDepth));
      }
      if (holds_huge_number(*v)) {
        unsupported(at, "a value holds a number of 2^63 or more, which would be written "
                        "rounded (a 64-bit float)");
      }
      std::string text = v->dump();
      if (text.size() > JsonSchema::kMaxLiteralBytes) {
        unsupported(at, "a value of " + std::to_string(text.size()) + " bytes is longer than " +
                            std::to_string(JsonSchema::kMaxLiteralBytes));
      }
      deepest = std::max(deepest, nesting);
      set.texts.push_back(std::move(text));
    }
    if (values.empty()) return nothing(at, "\"enum\" is empty");
    if (set.texts.empty()) return nothing(at, "no value of \"enum\" or \"const\" has its type");
    if (set.texts.size() > JsonSchema::kMaxCount) {
      unsupported(at, "more than " + std::to_string(JsonSchema::kMaxCount) + " values");
    }
    std::sort(set.texts.begin(), set.texts.end());
    set.texts.erase(std::unique(set.texts.begin(), set.texts.end()), set.texts.end());
    set.numbers.assign(set.texts.size(), 0);
    Node node;
    node.kind = Kind::literals;
    node.literals = add_literal_set(std::move(set), at);
    return add_node(node, deepest, at);
  }

  std::vector<std::string> type_names(const Json& s, const std::string& at) {
    const Json& type = s.at("type");
    std::vector<std::string> names;
    if (type.is_string()) {
      names.push_back(type.get<std::string>());
    } else if (type.is_array() && !type.empty()) {
      for (const Json& t : type) {
        if (!t.is_string()) invalid(at, "\"type\" lists names of types");
        names.push_back(t.get<std::string>());
      }
    } else {
      invalid(at, "\"type\" must be a type's name or a non-empty array of them");
    }
    for (const std::string& name : names) {
      if (!kTypeNames.count(name)) {
        invalid(at, "\"type\": \"" + name + "\" is not a type (object, array, string, number, "
                    "integer, boolean, null)");
      }
    }
    return names;
  }

  NodeId typed(const Json& s, const std::string& at, int nesting) {
    std::set<std::string> names;
    if (s.contains("type")) {
      for (std::string& name : type_names(s, at)) names.insert(std::move(name));
    } else {
      for (const auto& [key, value] : s.items()) {
        if (kObjectKeywords.count(key)) names.insert("object");
        if (kArrayKeywords.count(key)) names.insert("array");
      }
      if (names.empty()) return scalar(Kind::any);
    }
    const NodeId id = typed_as(s, names, at, nesting);
    // Without "type" the schema takes values of every kind; generation writes those its
    // keywords are about. A oneOf cannot keep its branches apart by kind then.
    if (id && !s.contains("type")) narrowed_[*id] = true;
    return id;
  }

  NodeId typed_as(const Json& s, std::set<std::string> names, const std::string& at,
                  int nesting) {
    if (names.count("number")) names.erase("integer");  // every integer is a number
    JsonSchema::Choice table;
    table.fill(JsonSchema::kNone);
    std::vector<uint16_t> built;
    for (const std::string& name : names) {
      NodeId id;
      if (name == "object") id = object(s, at, nesting);
      else if (name == "array") id = array(s, at, nesting);
      else if (name == "string") id = scalar(Kind::string);
      else if (name == "number") id = scalar(Kind::number);
      else if (name == "integer") id = scalar(Kind::integer);
      else if (name == "boolean") id = scalar(Kind::boolean);
      else id = scalar(Kind::null);
      if (!id) continue;
      const JsonSchema::Choice starts = starts_of(*id);
      for (size_t k = 0; k < JsonSchema::kStarts; ++k) {
        if (starts[k] != JsonSchema::kNone) table[k] = starts[k];
      }
      built.push_back(*id);
    }
    if (built.empty()) return std::nullopt;
    if (built.size() == 1) return built[0];
    return choice(table);
  }

  NodeId object(const Json& s, const std::string& at, int nesting) {
    std::vector<std::pair<std::string, NodeId>> properties;
    if (s.contains("properties")) {
      const Json& p = s.at("properties");
      if (!p.is_object()) invalid(at, "\"properties\" must be an object of schemas");
      const std::string p_at = child_at(at, "properties");
      for (const auto& [name, sub] : p.items()) {
        properties.emplace_back(name, compile(sub, child_at(p_at, name), nesting + 1));
      }
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      const Json& r = s.at("required");
      if (!r.is_array()) invalid(at, "\"required\" must be an array of property names");
      for (const Json& name : r) {
        if (!name.is_string()) invalid(at, "\"required\" must be an array of property names");
        if (!required.insert(name.get<std::string>()).second) {
          invalid(at, "\"required\" lists \"" + name.get<std::string>() + "\" twice");
        }
      }
    }
    // Beside listed properties (even ones no value satisfies) additionalProperties is never
    // used: generated objects hold listed ones only.
    const bool listed_any = !properties.empty();
    bool others_allowed = true;
    NodeId others = scalar(Kind::any);
    if (s.contains("additionalProperties")) {
      const Json& a = s.at("additionalProperties");
      if (!a.is_boolean() && !a.is_object()) {
        invalid(at, "\"additionalProperties\" must be a schema, true or false");
      }
      if (!listed_any) others = compile(a, child_at(at, "additionalProperties"), nesting + 1);
      others_allowed = !a.is_boolean() || a.get<bool>();
      if (!others) others_allowed = false;
    }
    for (const std::string& name : required) {
      const auto listed = std::find_if(properties.begin(), properties.end(),
                                       [&](const auto& p) { return p.first == name; });
      if (listed == properties.end()) {
        if (!others_allowed) {
          return nothing(at, "\"required\" names \"" + name + "\", which "
                             "\"additionalProperties\" forbids");
        }
        unsupported(at, "\"required\" names \"" + name + "\", which \"properties\" does not "
                        "list (a required property needs its schema there)");
      }
      if (!listed->second) {
        return nothing(at, "the required property \"" + name + "\" accepts no value");
      }
    }
    std::erase_if(properties, [](const auto& p) { return !p.second; });
    if (!listed_any && others_allowed) {
      Node node;
      node.kind = Kind::map;
      node.child = *others;
      return add_node(node, 1 + depth_[*others], at);
    }
    if (properties.size() > JsonSchema::kMaxCount) {
      unsupported(at, "more than " + std::to_string(JsonSchema::kMaxCount) + " properties");
    }
    Node node;
    node.kind = Kind::object;
    node.first = uint32_t(schema_.properties_.size());
    node.count = uint32_t(properties.size());
    JsonSchema::LiteralSet keys;
    int deepest = 0;
    for (size_t i = 0; i < properties.size(); ++i) {
      schema_.properties_.push_back({*properties[i].second,
                                     required.count(properties[i].first) > 0});
      deepest = std::max(deepest, int(depth_[*properties[i].second]));
      keys.texts.push_back(Json(properties[i].first).dump());
      keys.numbers.push_back(uint32_t(i));
    }
    uint32_t next = node.first + node.count;
    schema_.next_required_.resize(schema_.properties_.size());
    for (uint32_t i = node.first + node.count; i-- > node.first;) {
      if (schema_.properties_[i].required) next = i;
      schema_.next_required_[i] = next;
    }
    std::vector<size_t> order(keys.texts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return keys.texts[a] < keys.texts[b]; });
    JsonSchema::LiteralSet sorted;
    for (const size_t i : order) {
      sorted.texts.push_back(keys.texts[i]);
      sorted.numbers.push_back(keys.numbers[i]);
    }
    node.literals = add_literal_set(std::move(sorted), at);
    return add_node(node, 1 + deepest, at);
  }

  NodeId array(const Json& s, const std::string& at, int nesting) {
    NodeId items = scalar(Kind::any);
    if (s.contains("items")) {
      const Json& i = s.at("items");
      if (i.is_array()) unsupported(at, "\"items\" as an array (tuples) is not supported");
      items = compile(i, child_at(at, "items"), nesting + 1);
    }
    Node node;
    node.kind = Kind::array;
    if (s.contains("minItems")) node.min_items = count_of(s, "minItems", at);
    if (s.contains("maxItems")) node.max_items = count_of(s, "maxItems", at);
    // (A reply's state counts items in 16 bits.)
    for (const char* keyword : {"minItems", "maxItems"}) {
      if (s.contains(keyword) && count_of(s, keyword, at) > JsonSchema::kMaxCount) {
        unsupported(at, "\"" + std::string(keyword) + "\" above " +
                            std::to_string(JsonSchema::kMaxCount));
      }
    }
    if (node.min_items > node.max_items) {
      return nothing(at, "\"minItems\" is above \"maxItems\"");
    }
    if (!items) {
      if (node.min_items > 0) return nothing(at, "\"items\" accepts no value, \"minItems\" asks "
                                                 "for some");
      node.max_items = 0;
      items = scalar(Kind::any);
    }
    node.child = *items;
    return add_node(node, 1 + (node.max_items == 0 ? 0 : depth_[*items]), at);
  }

  // The root as an object: format JSON writes one object.
  uint16_t object_root(uint16_t id) {
    const Node& node = schema_.nodes_[id];
    // Keywords about arrays alone leave objects free.
    if (narrowed_[id] && starts_of(id)[size_t(Start::object)] == JsonSchema::kNone) {
      return object_root(scalar(Kind::any));
    }
    switch (node.kind) {
      case Kind::object:
      case Kind::map:
        return id;
      case Kind::any: {
        Node map;
        map.kind = Kind::map;
        map.child = id;
        return *add_node(map, 1, "");
      }
      case Kind::choice: {
        const uint16_t object = schema_.choices_[node.first][size_t(Start::object)];
        if (object != JsonSchema::kNone) return object_root(object);
        break;
      }
      case Kind::literals: {
        JsonSchema::LiteralSet objects;
        for (const std::string& text : schema_.literal_sets_[node.literals].texts) {
          if (text[0] == '{') objects.texts.push_back(text);
        }
        if (objects.texts.empty()) break;
        objects.numbers.assign(objects.texts.size(), 0);
        Node literals = node;
        literals.literals = add_literal_set(std::move(objects), "");
        return *add_node(literals, depth_[id], "");
      }
      default:
        break;
    }
    invalid("", "no object satisfies the schema (format JSON writes one object)");
  }

  JsonSchema::Choice starts_of(uint16_t id) const {
    const Node& node = schema_.nodes_[id];
    JsonSchema::Choice starts;
    starts.fill(JsonSchema::kNone);
    const auto set = [&](Start s) { starts[size_t(s)] = id; };
    switch (node.kind) {
      case Kind::any:
        starts.fill(id);
        break;
      case Kind::object:
      case Kind::map:
        set(Start::object);
        break;
      case Kind::array:
        set(Start::array);
        break;
      case Kind::string:
        set(Start::string);
        break;
      case Kind::number:
      case Kind::integer:
        set(Start::number);
        break;
      case Kind::boolean:
        set(Start::true_);
        set(Start::false_);
        break;
      case Kind::null:
        set(Start::null);
        break;
      case Kind::literals:
        for (const std::string& text : schema_.literal_sets_[node.literals].texts) {
          Start s;
          if (JsonSchema::start_of(uint8_t(text[0]), s)) set(s);
        }
        break;
      case Kind::choice:
        starts = schema_.choices_[node.first];
        break;
    }
    return starts;
  }

  static std::string start_name(Start s) {
    switch (s) {
      case Start::object: return "an object";
      case Start::array: return "an array";
      case Start::string: return "a string";
      case Start::number: return "a number";
      case Start::true_: return "true";
      case Start::false_: return "false";
      case Start::null: return "null";
    }
    return "a value";
  }

  uint16_t choice(const JsonSchema::Choice& table) {
    Node node;
    node.kind = Kind::choice;
    node.first = uint32_t(schema_.choices_.size());
    schema_.choices_.push_back(table);
    uint8_t deepest = 0;
    for (const uint16_t id : table) {
      if (id != JsonSchema::kNone) deepest = std::max(deepest, depth_[id]);
    }
    return *add_node(node, deepest, "");
  }

  uint16_t scalar(Kind kind) {
    uint16_t& id = scalars_[size_t(kind)];
    if (id == JsonSchema::kNone) {
      Node node;
      node.kind = kind;
      id = *add_node(node, 0, "");
    }
    return id;
  }

  NodeId add_node(const Node& node, int depth, const std::string& at) {
    if (depth > JsonSchema::kMaxContainerDepth) {
      unsupported(at, "objects and arrays nest deeper than " +
                          std::to_string(JsonSchema::kMaxContainerDepth));
    }
    if (schema_.nodes_.size() == JsonSchema::kMaxNodes) {
      unsupported(at, "the schema is too large (more than " +
                          std::to_string(JsonSchema::kMaxNodes) + " parts)");
    }
    schema_.nodes_.push_back(node);
    depth_.push_back(uint8_t(depth));
    narrowed_.push_back(false);
    return uint16_t(schema_.nodes_.size() - 1);
  }

  uint16_t add_literal_set(JsonSchema::LiteralSet set, const std::string& at) {
    if (schema_.literal_sets_.size() == JsonSchema::kMaxNodes) {
      unsupported(at, "the schema is too large");
    }
    schema_.literal_sets_.push_back(std::move(set));
    return uint16_t(schema_.literal_sets_.size() - 1);
  }

  const Json& document_;
  JsonSchema schema_;
  std::vector<uint8_t> depth_;  // by node: containers nested in its values at most
  std::array<uint16_t, 16> scalars_ = [] {
    std::array<uint16_t, 16> a;
    a.fill(JsonSchema::kNone);
    return a;
  }();
  std::vector<bool> narrowed_;  // by node: read from keywords without "type" (see typed())
  std::string why_nothing_;
  std::map<std::string, NodeId> refs_done_;
  std::set<std::string> refs_open_;
};

bool JsonSchema::start_of(uint8_t c, Start& start) {
  switch (c) {
    case '{': start = Start::object; return true;
    case '[': start = Start::array; return true;
    case '"': start = Start::string; return true;
    case 't': start = Start::true_; return true;
    case 'f': start = Start::false_; return true;
    case 'n': start = Start::null; return true;
    default:
      if (c == '-' || (c >= '0' && c <= '9')) {
        start = Start::number;
        return true;
      }
      return false;
  }
}

std::shared_ptr<const JsonSchema> JsonSchema::compile(std::string_view text) {
  if (text.size() > kMaxTextBytes) {
    fail(Status::invalid_argument, "json_schema has " + std::to_string(text.size()) +
                                       " bytes; at most " + std::to_string(kMaxTextBytes));
  }
  Json document;
  try {
    document = Json::parse(text);
  } catch (const Json::exception& e) {
    fail(Status::invalid_argument, std::string("json_schema is not JSON: ") + e.what());
  }
  return JsonSchemaCompiler(document).run();
}

}  // namespace parley::text
