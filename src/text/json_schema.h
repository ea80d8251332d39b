// A JSON Schema, of the subset a reply can be generated to, compiled into the values each
// place of the reply may hold.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace parley::text {

// What compile() takes (JSON Schema 2020-12 and draft 7 keywords):
// - type (a name or a list of them), enum, const;
// - properties, required, additionalProperties (objects);
// - items (one schema), minItems, maxItems (arrays);
// - anyOf and oneOf whose branches start differently (a string, a number, an object, ...;
//   a oneOf's branches each with a type, since one without takes every kind);
// - $ref to a place in the same document ("#/$defs/Name"), not recursive;
// - true, false, and annotations (title, description, default, format, examples, ...).
// Keywords that would constrain values in ways generation does not follow (minLength,
// pattern, minimum, allOf, ...) are refused (UNSUPPORTED), never ignored; keywords unknown to
// JSON Schema are ignored, as it asks. What no value satisfies is left out where it is an
// optional property or a branch; elsewhere the schema is refused (INVALID_ARGUMENT).
//
// Generation writes a subset of the values the schema accepts: an object's properties in the
// order the schema lists them, none besides those (unless the schema lists none: then any
// keys, which may repeat, as the state has no room for the keys so far), integers
// without fraction or exponent, and enum/const values as compact JSON (nlohmann's dump: in
// strings only quotes, backslashes and control characters escaped). A schema without `type` is
// read from its keywords (properties: an object; items: an array).
class JsonSchema {
 public:
  // The nesting of containers a schema may ask for (its objects and arrays, enum values'
  // included), so that what it asks stays within what JsonPrefix takes.
  static constexpr int kMaxContainerDepth = 32;
  static constexpr size_t kMaxNodes = 8192;
  static constexpr size_t kMaxLiteralBytes = 4096;
  static constexpr size_t kMaxTextBytes = size_t{1} << 20;
  // Counts a reply's state keeps in 16 bits: properties of an object, minItems; a maxItems
  // beyond it does not limit.
  static constexpr uint32_t kMaxCount = UINT16_MAX - 1;

  // The schema in `text` (a JSON document). Throws Error: INVALID_ARGUMENT for text that is
  // not a valid schema or one no object satisfies, UNSUPPORTED for one outside the subset;
  // the message names the place (a JSON pointer) and the keyword.
  static std::shared_ptr<const JsonSchema> compile(std::string_view text);

  enum class Kind : uint8_t {
    any,       // any JSON value
    object,    // listed properties only: props_[first, first + count), keys_[literals]
    map,       // any keys, each value `child`
    array,     // items `child`, min_items..max_items of them
    string,
    number,
    integer,
    boolean,
    null,
    literals,  // one of literals_[literals] (compact JSON texts)
    choice,    // by the value's first byte: choices_[first]
  };
  // How a value starts: the index into a choice's table.
  enum class Start : uint8_t { object, array, string, number, true_, false_, null };
  static constexpr size_t kStarts = 7;
  // The start of a value whose first byte is `c`, or false when no value starts with it.
  static bool start_of(uint8_t c, Start& start);

  static constexpr uint16_t kNone = UINT16_MAX;

  struct Node {
    Kind kind = Kind::any;
    uint16_t child = kNone;     // array items, map values
    uint16_t literals = kNone;  // literal set of a literals node, key set of an object
    uint32_t first = 0;         // object: first property; choice: its table
    uint32_t count = 0;         // object: properties
    uint32_t min_items = 0;
    uint32_t max_items = UINT32_MAX;
  };
  struct Property {
    uint16_t node;
    bool required;
  };
  // Compact JSON texts, sorted, each with a number: for a key set, its property's index in
  // the object; for values, unused.
  struct LiteralSet {
    std::vector<std::string> texts;
    std::vector<uint32_t> numbers;
  };
  using Choice = std::array<uint16_t, kStarts>;  // kNone where no branch starts so

  uint16_t root() const { return root_; }
  const Node& node(uint16_t id) const { return nodes_[id]; }
  const Property& property(uint32_t index) const { return properties_[index]; }
  const LiteralSet& literal_set(uint16_t id) const { return literal_sets_[id]; }
  const Choice& choice(uint32_t index) const { return choices_[index]; }
  // The index of the first required property at `index` or after it in its object (index
  // within the object's range), or the object's end when none is.
  uint32_t next_required(uint32_t index) const { return next_required_[index]; }

 private:
  friend class JsonSchemaCompiler;

  uint16_t root_ = kNone;
  std::vector<Node> nodes_;
  std::vector<Property> properties_;
  std::vector<uint32_t> next_required_;
  std::vector<LiteralSet> literal_sets_;
  std::vector<Choice> choices_;
};

}  // namespace parley::text
