// The protobuf wire format, as far as Parley reads and writes it (sentencepiece's ModelProto)
// without libprotobuf: fields of one message read bounds-checked, and written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace parley::protobuf {

enum WireType : uint32_t {
  kWireVarint = 0,
  kWireFixed64 = 1,
  kWireLengthDelimited = 2,
  kWireFixed32 = 5,
};

// Reads the fields of one message; unknown fields are skipped by wire type. Malformed bytes
// throw Error(bad_model) naming the source ("tokenizer model") and the message.
class WireReader {
 public:
  struct Field {
    uint32_t number = 0;
    uint32_t wire_type = 0;
    uint64_t value = 0;      // varint fields
    std::string_view bytes;  // length-delimited fields
  };

  WireReader(std::string_view data, const char* source, const char* message)
      : data_(data), source_(source), message_(message) {}

  bool done() const { return pos_ == data_.size(); }
  // Where the next field starts: the bytes between two offsets are whole fields.
  size_t offset() const { return pos_; }
  std::string_view slice(size_t begin, size_t end) const {
    return data_.substr(begin, end - begin);
  }

  Field next() {
    Field f;
    const uint64_t key = varint();
    f.number = uint32_t(key >> 3);
    f.wire_type = uint32_t(key & 7);
    switch (f.wire_type) {
      case kWireVarint:
        f.value = varint();
        break;
      case kWireFixed64:
        take(8);
        break;
      case kWireLengthDelimited: {
        const uint64_t n = varint();
        require(n <= data_.size() - pos_, Status::bad_model,
                [&] { return problem("a field of ") + message_ + " runs past its end"; });
        f.bytes = take(size_t(n));
        break;
      }
      case kWireFixed32:
        take(4);
        break;
      default:
        fail(Status::bad_model,
             problem("unknown wire type ") + std::to_string(f.wire_type) + " in " + message_);
    }
    return f;
  }

 private:
  // Called per field: the messages are built only when a check fails.
  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      require(pos_ < data_.size(), Status::bad_model,
              [&] { return problem("truncated varint in ") + message_; });
      const auto b = uint8_t(data_[pos_++]);
      value |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return value;
    }
    fail(Status::bad_model, problem("varint longer than 10 bytes in ") + message_);
  }
  std::string_view take(size_t n) {
    require(n <= data_.size() - pos_, Status::bad_model,
            [&] { return problem("truncated field in ") + message_; });
    const auto s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string problem(const char* what) const { return std::string(source_) + ": " + what; }

  std::string_view data_;
  const char* source_;
  const char* message_;
  size_t pos_ = 0;
};

class WireWriter {
 public:
  void varint(uint32_t number, uint64_t value) {
    key(number, kWireVarint);
    raw_varint(value);
  }
  // Negative int32 values are sign-extended to 64 bits, as protobuf encodes them.
  void int32(uint32_t number, int32_t value) { varint(number, uint64_t(int64_t(value))); }
  void boolean(uint32_t number, bool value) { varint(number, value ? 1 : 0); }
  void float32(uint32_t number, float value) {
    key(number, kWireFixed32);
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 4; ++i) out_.push_back(char((bits >> (8 * i)) & 0xFF));
  }
  void bytes(uint32_t number, std::string_view value) {
    key(number, kWireLengthDelimited);
    raw_varint(value.size());
    out_.append(value);
  }
  // Bytes that are already one or more whole fields.
  void fields(std::string_view encoded) { out_.append(encoded); }
  const std::string& data() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void key(uint32_t number, uint32_t wire_type) { raw_varint((uint64_t(number) << 3) | wire_type); }
  void raw_varint(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(char((value & 0x7F) | 0x80));
      value >>= 7;
    }
    out_.push_back(char(value));
  }
  std::string out_;
};

}  // namespace parley::protobuf
