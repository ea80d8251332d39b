#include "text/schema_prefix.h"

#include <algorithm>

namespace parley::text {
namespace {

using Expect = JsonPrefix::Expect;
using Kind = JsonSchema::Kind;
using Start = JsonSchema::Start;

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

}  // namespace

SchemaPrefix::SchemaPrefix(const JsonSchema* schema) : schema_(schema) {
  if (schema_) next_ = schema_->root();
}

bool SchemaPrefix::feed(uint8_t c) {
  if (!schema_) return syntax_.feed(c);
  if (literals_ != JsonSchema::kNone) return feed_literal(c);
  if (free_depth_ != kNotFree) {
    if (!syntax_.feed(c)) return false;
    if (syntax_.depth() == free_depth_) free_depth_ = kNotFree;
    return true;
  }
  return feed_structure(c);
}

size_t SchemaPrefix::feed_taken(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!feed(static_cast<uint8_t>(bytes[i]))) return i;
  }
  return bytes.size();
}

bool SchemaPrefix::feed_structure(uint8_t c) {
  const Expect expect = syntax_.expect();
  if (is_space(c) && expect != Expect::token && expect != Expect::number) {
    return syntax_.feed(c);
  }
  switch (expect) {
    case Expect::token:
    case Expect::colon:
      return syntax_.feed(c);
    case Expect::number:
      if (is_digit(c)) return syntax_.feed(c);
      if (c == '.' || c == 'e' || c == 'E') return !integer_ && syntax_.feed(c);
      integer_ = false;
      return after_value(c);
    case Expect::object:
    case Expect::value:
      return start_value(c);
    case Expect::value_or_close:
      return c == ']' ? close(c) : start_value(c);
    case Expect::key_or_close:
      if (c == '}') return close(c);
      [[fallthrough]];
    case Expect::key:
      return c == '"' && start_key();
    case Expect::after_value:
      return after_value(c);
    case Expect::done:
      return false;
  }
  return false;
}

bool SchemaPrefix::start_value(uint8_t c) {
  Start start;
  if (!JsonSchema::start_of(c, start)) return false;
  if (n_frames_ > 0) {
    Frame& frame = frames_[n_frames_ - 1];
    const JsonSchema::Node& container = schema_->node(frame.node);
    if (container.kind == Kind::array) {
      if (frame.count >= container.max_items) return false;
      if (frame.count < UINT16_MAX) ++frame.count;  // past kMaxCount it only has to be big
    }
  }
  uint16_t id = next_;
  if (schema_->node(id).kind == Kind::choice) {
    id = schema_->choice(schema_->node(id).first)[size_t(start)];
    if (id == JsonSchema::kNone) return false;
  }
  const JsonSchema::Node& node = schema_->node(id);
  switch (node.kind) {
    case Kind::any:
      if (!syntax_.feed(c)) return false;
      if (start == Start::object || start == Start::array) {
        free_depth_ = uint8_t(syntax_.depth() - 1);
      }
      return true;
    case Kind::literals:
      literals_ = node.literals;
      literal_key_ = false;
      literal_at_ = 0;
      literal_low_ = 0;
      literal_high_ = uint16_t(schema_->literal_set(node.literals).texts.size());
      window_low_ = 0;
      window_high_ = UINT16_MAX;
      return feed_literal(c);
    case Kind::object:
    case Kind::map:
    case Kind::array:
      if (start != (node.kind == Kind::array ? Start::array : Start::object)) return false;
      if (n_frames_ == frames_.size() || !syntax_.feed(c)) return false;
      frames_[n_frames_++] = {id, 0};
      if (node.kind == Kind::array) next_ = node.child;
      return true;
    case Kind::string:
      return start == Start::string && syntax_.feed(c);
    case Kind::number:
    case Kind::integer:
      if (start != Start::number) return false;
      integer_ = node.kind == Kind::integer;
      return syntax_.feed(c);
    case Kind::boolean:
      return (start == Start::true_ || start == Start::false_) && syntax_.feed(c);
    case Kind::null:
      return start == Start::null && syntax_.feed(c);
    case Kind::choice:
      return false;  // a choice's branches are never choices
  }
  return false;
}

bool SchemaPrefix::start_key() {
  if (n_frames_ == 0) return false;
  Frame& frame = frames_[n_frames_ - 1];
  const JsonSchema::Node& node = schema_->node(frame.node);
  if (node.kind == Kind::map) {
    next_ = node.child;
    return syntax_.feed('"');
  }
  if (node.kind != Kind::object || frame.count >= node.count) return false;
  // The next property is any up to the first required one.
  const uint32_t end = node.first + node.count;
  const uint32_t last = std::min(schema_->next_required(node.first + frame.count) + 1, end);
  literals_ = node.literals;
  literal_key_ = true;
  literal_at_ = 0;
  literal_low_ = 0;
  literal_high_ = uint16_t(node.count);
  window_low_ = frame.count;
  window_high_ = uint16_t(last - node.first);
  return feed_literal('"');
}

bool SchemaPrefix::after_value(uint8_t c) {
  if (is_space(c)) return syntax_.feed(c);
  if (c == '}' || c == ']') return close(c);
  if (c != ',' || n_frames_ == 0) return false;
  const Frame& frame = frames_[n_frames_ - 1];
  const JsonSchema::Node& node = schema_->node(frame.node);
  if (node.kind == Kind::array) {
    if (frame.count >= node.max_items) return false;
    next_ = node.child;
  } else if (node.kind == Kind::object && frame.count >= node.count) {
    return false;
  }
  return syntax_.feed(c);
}

bool SchemaPrefix::close(uint8_t c) {
  if (n_frames_ == 0) return false;
  const Frame& frame = frames_[n_frames_ - 1];
  const JsonSchema::Node& node = schema_->node(frame.node);
  if ((c == ']') != (node.kind == Kind::array)) return false;
  if (node.kind == Kind::array && frame.count < node.min_items) return false;
  if (node.kind == Kind::object && frame.count < node.count &&
      schema_->next_required(node.first + frame.count) < node.first + node.count) {
    return false;  // a required property is still to come
  }
  if (!syntax_.feed(c)) return false;
  --n_frames_;
  return true;
}

bool SchemaPrefix::feed_literal(uint8_t c) {
  const JsonSchema::LiteralSet& set = schema_->literal_set(literals_);
  // The texts in [low, high) all start with the bytes read so far; those that go on with c
  // are a range too.
  uint32_t low = UINT32_MAX, high = 0;
  bool allowed = false;
  for (uint32_t i = literal_low_; i < literal_high_; ++i) {
    const std::string& text = set.texts[i];
    if (text.size() <= literal_at_ || uint8_t(text[literal_at_]) != c) continue;
    low = std::min(low, i);
    high = i + 1;
    allowed = allowed || in_window(set.numbers[i]);
  }
  if (allowed) {
    if (!syntax_.feed(c)) return false;
    literal_low_ = uint16_t(low);
    literal_high_ = uint16_t(high);
    ++literal_at_;
    // A text read whole ends here when the syntax says its value (or key) has ended; a
    // number's end shows only at the byte after it.
    const Expect expect = syntax_.expect();
    if (set.texts[literal_low_].size() == literal_at_ && in_window(set.numbers[literal_low_]) &&
        (expect == Expect::after_value || expect == Expect::colon || expect == Expect::done)) {
      finish_literal();
    }
    return true;
  }
  // No text goes on with c: a number read whole ends here, and c comes after it.
  if (set.texts[literal_low_].size() != literal_at_ || !in_window(set.numbers[literal_low_])) {
    return false;
  }
  finish_literal();
  return after_value(c);
}

void SchemaPrefix::finish_literal() {
  if (literal_key_) {
    Frame& frame = frames_[n_frames_ - 1];
    const JsonSchema::Node& node = schema_->node(frame.node);
    const uint32_t index = schema_->literal_set(literals_).numbers[literal_low_];
    frame.count = uint16_t(index + 1);
    next_ = schema_->property(node.first + index).node;
  }
  literals_ = JsonSchema::kNone;
}

}  // namespace parley::text
