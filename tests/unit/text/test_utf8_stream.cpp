// UTF-8 validity and the stream that hands out whole code points only.
#include <doctest/doctest.h>

#include <random>

#include "text/utf8_stream.h"
#include "text_fixtures.h"

namespace parley::text {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// Everything a stream hands out when fed `bytes` in the given chunk sizes, then finished.
std::string stream_all(std::string_view bytes, size_t chunk) {
  Utf8Stream stream;
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += chunk) out += stream.push(bytes.substr(i, chunk));
  return out + stream.finish();
}

TEST_CASE("is_valid_utf8 accepts well-formed text of 1 to 4 bytes per code point") {
  for (const std::string& s : {std::string(), std::string("a"), std::string(1, '\0'),
                              std::string("\x7F"), std::string("\xC2\x80"),       // U+0080
                              std::string("\xC3\xA9"),                           // é
                              std::string("\xDF\xBF"),                           // U+07FF
                              std::string("\xE0\xA0\x80"),                       // U+0800
                              std::string("\xE2\x82\xAC"),                       // €
                              std::string("\xED\x9F\xBF"),                       // U+D7FF
                              std::string("\xEE\x80\x80"),                       // U+E000
                              std::string("\xEF\xBF\xBF"),                       // U+FFFF
                              std::string("\xF0\x90\x80\x80"),                   // U+10000
                              std::string("\xF0\x9F\x98\x80"),                   // 😀
                              std::string("\xF4\x8F\xBF\xBF"),                   // U+10FFFF
                              std::string("\xE6\x97\xA5\xE6\x9C\xAC a")}) {      // 日本 a
    CAPTURE(test::escaped(s));
    CHECK(is_valid_utf8(s));
  }
}

TEST_CASE("is_valid_utf8 rejects ill-formed sequences") {
  for (const char* s : {
           "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xE0\x9F\xBF", "\xF0\x80\x80\x80",
           "\xF0\x8F\xBF\xBF",                          // overlong forms
           "\xED\xA0\x80", "\xED\xBF\xBF",              // surrogates U+D800, U+DFFF
           "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xF8\x88\x80\x80\x80", "\xFF", "\xFE",
           "\xC3", "\xE2\x82", "\xF0\x9F\x98", "a\xF0\x9F\x98",  // truncated
           "\x80", "a\x80z", "\xBF", "\xC3\xA9\xA9",             // stray continuation bytes
           "\xE2\x28\xA1", "\xC3\x28"}) {                        // lead without continuation
    CAPTURE(test::escaped(s));
    CHECK_FALSE(is_valid_utf8(s));
  }
}

TEST_CASE("unfinished_tail_length: the bytes at the end that a code point may still follow") {
  CHECK(unfinished_tail_length("") == 0);
  CHECK(unfinished_tail_length("abc") == 0);
  CHECK(unfinished_tail_length("a\xC3") == 1);                // é cut after its lead
  CHECK(unfinished_tail_length("\xC3\xA9") == 0);             // é whole
  CHECK(unfinished_tail_length("x\xE6\x97") == 2);            // 日 cut after 2 of 3
  CHECK(unfinished_tail_length("\xF0\x9F\x98") == 3);         // 😀 cut after 3 of 4
  CHECK(unfinished_tail_length("\x80") == 0);                 // a continuation byte alone
  CHECK(unfinished_tail_length("\xC0") == 0);                 // never a lead
  CHECK(unfinished_tail_length("\xE0\x80") == 0);             // an overlong start
  CHECK(unfinished_tail_length("\xED\xA0") == 0);             // a surrogate's start
}

TEST_CASE("Utf8Stream holds a split code point until its last byte arrives") {
  Utf8Stream stream;
  CHECK(stream.push("a\xF0") == "a");
  CHECK(stream.push("\x9F") == "");
  CHECK(stream.push("\x98") == "");
  CHECK(stream.push("\x80" "b") == "\xF0\x9F\x98\x80" "b");
  CHECK(stream.push("\xE6\x97") == "");
  CHECK(stream.push("\xA5\xE6") == "\xE6\x97\xA5");
  CHECK(stream.push("\x9C\xAC") == "\xE6\x9C\xAC");
  CHECK(stream.finish() == "");
}

TEST_CASE("Utf8Stream replaces each maximal invalid subpart with one U+FFFD") {
  // The example of the Unicode Standard, section 3.9 ("U+FFFD Substitution of Maximal
  // Subparts"): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
  const std::string input = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string expected =
      "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d";
  for (size_t chunk = 1; chunk <= input.size(); ++chunk) {
    CAPTURE(chunk);
    CHECK(stream_all(input, chunk) == expected);
  }
  CHECK(stream_all("\xC0\x80", 1) == kFffd + kFffd);  // C0 can never start a sequence
  CHECK(stream_all("\xE0\x80\x80", 1) == kFffd + kFffd + kFffd);  // overlong
  CHECK(stream_all("\xED\xA0\x80", 1) == kFffd + kFffd + kFffd);  // surrogate
  CHECK(stream_all("\xF4\x90\x80\x80", 1) == kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  CHECK(stream_all("\xF0\x9F\x98" "a", 1) == kFffd + "a");  // one subpart, cut by "a"
  CHECK(stream_all("\xE2\x82\xE2\x82\xAC", 2) == kFffd + "\xE2\x82\xAC");
}

TEST_CASE("Utf8Stream says where the bytes pushed show in the text it hands out") {
  Utf8Stream stream;
  size_t at = 0;
  CHECK(stream.push("ab", &at) == "ab");
  CHECK(at == 0);
  CHECK(stream.push("\xE2", &at).empty());  // held back
  CHECK(at == std::string::npos);
  // The held byte cut short shows as U+FFFD; the new lead byte is held in its turn.
  CHECK(stream.push("\xC3", &at) == kFffd);
  CHECK(at == std::string::npos);
  // A code point finished by the bytes pushed: they show where it starts.
  CHECK(stream.push("\xA9"
                    "c",
                    &at) ==
        "\xC3\xA9"
        "c");
  CHECK(at == 0);
  CHECK(stream.push("\xE2\x82", &at).empty());
  CHECK(stream.push("z", &at) == kFffd + "z");
  CHECK(at == kFffd.size());
  CHECK(stream.push("", &at).empty());
  CHECK(at == std::string::npos);
}

TEST_CASE("Utf8Stream turns a NUL into U+FFFD, so the text stays whole as a C string") {
  Utf8Stream stream;
  CHECK(stream.push(std::string("a\0b\0", 4)) == "a" + std::string(kFffd) + "b" + kFffd);
}

TEST_CASE("Utf8Stream::finish turns an incomplete tail into one U+FFFD") {
  Utf8Stream stream;
  CHECK(stream.push("ok\xF0\x9F\x98") == "ok");
  CHECK(stream.finish() == kFffd);
  CHECK(stream.finish() == "");
  CHECK(stream.push("x") == "x");  // usable again
}

TEST_CASE("Utf8Stream output is valid, and the same however the input is cut") {
  std::mt19937 rng(12345);
  // Bytes biased toward UTF-8 lead and continuation bytes, so that valid and invalid sequences
  // both occur often.
  const unsigned char alphabet[] = {'a', ' ', 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC2, 0xC3,
                                    0xC0, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  std::uniform_int_distribution<size_t> pick(0, sizeof alphabet - 1);
  std::uniform_int_distribution<size_t> length(0, 24);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes;
    for (size_t n = length(rng); n > 0; --n) bytes.push_back(char(alphabet[pick(rng)]));
    CAPTURE(test::escaped(bytes));
    const std::string whole = stream_all(bytes, bytes.size() + 1);
    CHECK(is_valid_utf8(whole));
    if (is_valid_utf8(bytes)) CHECK(whole == bytes);
    for (size_t chunk : {1, 2, 3, 5}) CHECK(stream_all(bytes, chunk) == whole);
  }
}

}  // namespace
}  // namespace parley::text
