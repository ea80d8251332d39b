// parley_model_info's name: a general.name longer than the field is cut at a UTF-8 character
// boundary, never inside a multi-byte sequence.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "abi_fixture.h"
#include "support/shared_assets.h"
#include "parley.h"

using namespace parley::test;

namespace {

constexpr size_t kNameRoom = sizeof(parley_model_info{}.name) - 1;  // 127 bytes and the NUL

// GGUF's string: a little-endian u64 length, then the bytes.
std::string gguf_string(const std::string& s) {
  std::string out(8, '\0');
  const uint64_t n = s.size();
  std::memcpy(out.data(), &n, 8);
  return out + s;
}

// The tiny chat model with general.name `name` in place of "synthetic". The name is 128 bytes
// longer, so the tensor data after the metadata keeps its 32-byte alignment.
std::string model_named(const TempDir& dir, const std::string& name) {
  REQUIRE(name.size() == std::string("synthetic").size() + 128);
  const std::string key = gguf_string("general.name") + std::string("\x08\0\0\0", 4);
  std::string bytes = read_file(tiny_chat_model());
  const size_t at = bytes.find(key + gguf_string("synthetic"));
  REQUIRE(at != std::string::npos);
  bytes.replace(at + key.size(), 8 + 9, gguf_string(name));
  const std::string path = (dir / "named.gguf").string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string model_info_name(const std::string& model) {
  EngineHandle e(model);
  parley_model_info info;
  info.struct_size = sizeof info;
  REQUIRE(parley_engine_get_model_info(e, &info) == PARLEY_OK);
  return info.name;
}

}  // namespace

TEST_CASE("model info: a long name is cut at a character boundary") {
  TempDir dir;
  const std::string e_acute = "\xC3\xA9", grin = "\xF0\x9F\x98\x80", tail(9, 'z');
  SUBCASE("a two-byte character across the cut is left out whole") {
    const std::string name =
        model_info_name(model_named(dir, std::string(126, 'a') + e_acute + tail));
    CHECK(name == std::string(126, 'a'));
    CHECK(is_one_line_of_utf8(name));
  }
  SUBCASE("a four-byte character across the cut is left out whole") {
    const std::string name =
        model_info_name(model_named(dir, std::string(124, 'a') + grin + tail));
    CHECK(name == std::string(124, 'a'));
    CHECK(is_one_line_of_utf8(name));
  }
  SUBCASE("a character that ends at the cut is kept") {
    const std::string name =
        model_info_name(model_named(dir, std::string(125, 'a') + e_acute + tail + "z"));
    CHECK(name.size() == kNameRoom);
    CHECK(name == std::string(125, 'a') + e_acute);
  }
}
