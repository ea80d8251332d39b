// Whether bytes can still grow into one JSON object that a schema accepts, a byte at a time.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "text/json_prefix.h"
#include "text/json_schema.h"

namespace parley::text {

// JsonPrefix (whose limits it keeps) that also follows a JsonSchema: each value may only
// start as its place in the schema allows, keys come in the schema's order, enum values byte
// by byte, and containers close only once they hold what the schema asks. Like JsonPrefix it
// refuses exactly the bytes that cannot lead on to a whole object the schema accepts, so a
// generator that picks only bytes it takes never gets stuck. Without a schema it is
// JsonPrefix. A plain value (copy it to try a byte); the schema must outlive it.
class SchemaPrefix {
 public:
  SchemaPrefix() = default;
  explicit SchemaPrefix(const JsonSchema* schema);

  // False when no object the schema accepts starts with the text so far and `c`; the state
  // is then spoiled (try bytes on a copy).
  bool feed(uint8_t c);
  // Feeds each byte in turn until one is refused; how many were taken.
  size_t feed_taken(std::string_view bytes);
  bool feed(std::string_view bytes) { return feed_taken(bytes) == bytes.size(); }
  // The object has closed, whole.
  bool complete() const { return syntax_.complete(); }
  // Inside a string whose characters the schema leaves free, between characters: the bytes up
  // to its closing quote may be the same whatever came before.
  bool between_string_characters() const {
    return syntax_.between_string_characters() && literals_ == JsonSchema::kNone;
  }
  // The schema followed (null: any object), and the JSON state alone: without a schema it is
  // the whole state, and a far smaller one to copy.
  const JsonSchema* schema() const { return schema_; }
  const JsonPrefix& syntax() const { return syntax_; }

 private:
  static constexpr uint8_t kNotFree = UINT8_MAX;
  struct Frame {
    uint16_t node;
    uint16_t count;  // object: properties written (the next one's index); array: items
  };

  bool feed_structure(uint8_t c);
  bool start_value(uint8_t c);
  bool start_key();
  bool after_value(uint8_t c);
  bool close(uint8_t c);
  bool feed_literal(uint8_t c);
  void finish_literal();
  bool in_window(uint32_t number) const {
    return number >= window_low_ && number < window_high_;
  }

  JsonPrefix syntax_;
  const JsonSchema* schema_ = nullptr;
  std::array<Frame, JsonSchema::kMaxContainerDepth> frames_{};  // the open containers
  uint8_t n_frames_ = 0;
  uint8_t free_depth_ = kNotFree;  // inside a container the schema leaves free: its depth
  bool integer_ = false;           // the number being read must be an integer
  bool literal_key_ = false;       // the literal being read is a key
  uint16_t next_ = JsonSchema::kNone;  // the node of the next value
  // A literal being read: the set, how many bytes are read, the range of texts that start
  // with them, and the numbers of the texts allowed (for keys: the properties that may come).
  uint16_t literals_ = JsonSchema::kNone;
  uint16_t literal_at_ = 0;
  uint16_t literal_low_ = 0;
  uint16_t literal_high_ = 0;
  uint16_t window_low_ = 0;
  uint16_t window_high_ = 0;
};

}  // namespace parley::text
