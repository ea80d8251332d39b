// JsonPrefix: which texts can still grow into one JSON object. Checked by hand on small cases,
// against nlohmann::json's parser (an independent reading of RFC 8259) on random documents and
// their mutations, and for exactness: from any text it takes, bytes it takes always lead on to
// a whole object.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "text/json_prefix.h"

namespace parley::text {
namespace {

// How far JsonPrefix takes `text`: the bytes taken, and whether the object closed.
struct Taken {
  size_t bytes = 0;
  bool complete = false;
};

Taken take(std::string_view text) {
  JsonPrefix p;
  Taken t;
  for (const char c : text) {
    JsonPrefix next = p;
    if (!next.feed(static_cast<uint8_t>(c))) return t;
    p = next;
    ++t.bytes;
  }
  t.complete = p.complete();
  return t;
}

bool is_object(std::string_view text) {
  const Taken t = take(text);
  return t.bytes == text.size() && t.complete;
}

// nlohmann's reading: one JSON object, nothing after it (whitespace included). A number
// beyond a double's range is valid JSON that nlohmann refuses (RFC 8259 leaves the range to
// each parser): `unknown` then.
enum class Reference { object, not_object, unknown };

Reference reference_reading(const std::string& text) {
  if (text.empty() || text.back() != '}') return Reference::not_object;
  try {
    return nlohmann::json::parse(text).is_object() ? Reference::object : Reference::not_object;
  } catch (const nlohmann::json::out_of_range&) {
    return Reference::unknown;
  } catch (const nlohmann::json::parse_error&) {
    return Reference::not_object;
  }
}

bool reference_object(const std::string& text) {
  return reference_reading(text) == Reference::object;
}

nlohmann::json random_value(std::mt19937& rng, int depth);

std::string random_string(std::mt19937& rng) {
  // Code points from every UTF-8 length, escapes and the edges of the surrogate range.
  static const char32_t kPoints[] = {U'a',     U'Z',     U' ',     U'"',     U'\\',   U'/',
                                     U'\n',    U'\t',    U'\x01',  U'\x7f',  U'\xe9', U'\x7ff',
                                     U'\x800', U'\xd7ff', U'\xe000', U'\xfffd', U'\xffff',
                                     U'\x10000', U'\x1f600', U'\x10ffff'};
  std::uniform_int_distribution<size_t> pick(0, std::size(kPoints) - 1);
  std::string s;
  const int n = std::uniform_int_distribution<int>(0, 6)(rng);
  for (int i = 0; i < n; ++i) {
    const char32_t cp = kPoints[pick(rng)];
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | cp >> 6);
      s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | cp >> 12);
      s += char(0x80 | (cp >> 6 & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | cp >> 18);
      s += char(0x80 | (cp >> 12 & 0x3F));
      s += char(0x80 | (cp >> 6 & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

nlohmann::json random_object(std::mt19937& rng, int depth) {
  nlohmann::json o = nlohmann::json::object();
  const int n = std::uniform_int_distribution<int>(0, depth > 3 ? 1 : 4)(rng);
  for (int i = 0; i < n; ++i) o[random_string(rng)] = random_value(rng, depth + 1);
  return o;
}

nlohmann::json random_value(std::mt19937& rng, int depth) {
  switch (std::uniform_int_distribution<int>(0, depth > 4 ? 6 : 8)(rng)) {
    case 0: return nullptr;
    case 1: return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    case 2: return std::uniform_int_distribution<int64_t>(-1000000, 1000000)(rng);
    case 3: return std::uniform_int_distribution<int>(0, 9)(rng);
    case 4: return std::uniform_real_distribution<double>(-1e30, 1e30)(rng);
    case 5: return std::uniform_real_distribution<double>(-1e-5, 1e-5)(rng);
    case 6: return random_string(rng);
    case 7: {
      nlohmann::json a = nlohmann::json::array();
      const int n = std::uniform_int_distribution<int>(0, 4)(rng);
      for (int i = 0; i < n; ++i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: return random_object(rng, depth);
  }
}

// Documents as serializers write them: compact, indented, ASCII-only (\u escapes, surrogate
// pairs for astral characters).
std::vector<std::string> random_documents(std::mt19937& rng, int n) {
  std::vector<std::string> docs;
  for (int i = 0; i < n; ++i) {
    const nlohmann::json o = random_object(rng, 0);
    docs.push_back(o.dump());
    docs.push_back(o.dump(2));
    docs.push_back(o.dump(-1, ' ', true));
    docs.push_back(o.dump(1, '\t', true));
  }
  return docs;
}

TEST_CASE("small objects are taken whole and complete at their closing brace") {
  for (const char* doc :
       {"{}", " {}", "\n{}", "{\"a\":1}", "{ \"a\" : [ 1 , 2.5e-3 , -0 , true , null ] }",
        "{\"k\":{\"n\":{}},\"e\":[],\"s\":\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
        "{\"x\":-12.50E+10,\"y\":0.0e0,\"z\":1E9}", "{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":0}",
        "{\n  \"a\": false\n}"}) {
    CAPTURE(doc);
    CHECK(is_object(doc));
    CHECK(reference_object(doc));
  }
}

TEST_CASE("texts that cannot become one object are refused at the first byte that shows it") {
  struct Case {
    const char* text;
    size_t taken;
  };
  for (const Case c : {Case{"[]", 0}, Case{"1", 0}, Case{"\"a\"", 0}, Case{"{]", 1},
                       Case{"{\"a\" 1}", 5}, Case{"{\"a\":01}", 6}, Case{"{\"a\":-}", 6},
                       Case{"{\"a\":1.}", 7}, Case{"{\"a\":1e}", 7}, Case{"{\"a\":+1}", 5},
                       Case{"{\"a\":tru}", 8}, Case{"{\"a\":nul1}", 8}, Case{"{a:1}", 1},
                       Case{"{\"a\":1,}", 7}, Case{"{\"a\":[1,]}", 8}, Case{"{\"a\":\"\x01\"}", 6},
                       Case{"{\"a\":\"\\x\"}", 7}, Case{"{\"a\":\"\\uDC00\"}", 9},
                       Case{"{\"a\":\"\\uD800x\"}", 12}, Case{"{\"a\":\"\\uD800\\u0041\"}", 14},
                       Case{"{\"a\":\"\\uD800\\uE\"}", 14}, Case{"{\"\xc0\xaf\":0}", 2},
                       Case{"{\"\xe0\x80\x80\":0}", 3}, Case{"{\"\xed\xa0\x80\":0}", 3},
                       Case{"{\"\xf4\x90\x80\x80\":0}", 3}, Case{"{\"\xff\":0}", 2},
                       Case{"{}}", 2}, Case{"{} ", 2}, Case{"{\"a\":1}\n", 7}}) {
    CAPTURE(std::string(c.text));
    const Taken t = take(c.text);
    CHECK(t.bytes == c.taken);
    CHECK_FALSE(t.complete);
    CHECK_FALSE(reference_object(c.text));
  }
}

TEST_CASE("whitespace between tokens: at most one line feed and 32 bytes in a run, no '\\r'") {
  CHECK(is_object("{" + std::string(32, ' ') + "}"));
  CHECK(take("{" + std::string(33, ' ') + "}").bytes == 33);
  CHECK(is_object("{\n" + std::string(31, '\t') + "}"));
  CHECK(is_object(std::string(31, ' ') + "\n{}"));
  CHECK(take(std::string(32, ' ') + "\n{}").bytes == 32);
  CHECK(take("{\n\n}").bytes == 2);
  CHECK(take("{ \n \n}").bytes == 4);
  // JSON allows "\r"; replies never hold it: a stop string "\n" would cut "\r\n" where
  // nothing but its "\n" could follow.
  CHECK(take("{\r\n}").bytes == 1);
  CHECK(take("\r{}").bytes == 0);
  CHECK(take("{\"a\":\r1}").bytes == 5);
  // Each token starts a new run.
  CHECK(is_object("{\n \"a\"\n :\n 1\n ,\n \"b\"\n :\n [\n ]\n }"));
  // Inside a string, spaces are text: no limit.
  CHECK(is_object("{\"" + std::string(100, ' ') + "\":0}"));
}

TEST_CASE("at most 64 nested objects and arrays") {
  std::string deep = "{\"a\":";
  for (int i = 1; i < JsonPrefix::kMaxDepth; ++i) deep += '[';
  std::string closed = deep + "0";
  for (int i = 1; i < JsonPrefix::kMaxDepth; ++i) closed += ']';
  CHECK(is_object(closed + "}"));
  CHECK(take(deep + "[").bytes == deep.size());
  CHECK(take(deep + "{").bytes == deep.size());
}

TEST_CASE("documents serializers write are taken whole; every shorter prefix is incomplete") {
  std::mt19937 rng(20261207);
  for (const std::string& doc : random_documents(rng, 300)) {
    CAPTURE(doc);
    REQUIRE(reference_object(doc));
    JsonPrefix p;
    for (size_t i = 0; i < doc.size(); ++i) {
      CHECK_FALSE(p.complete());
      REQUIRE(p.feed(static_cast<uint8_t>(doc[i])));
    }
    CHECK(p.complete());
  }
}

TEST_CASE("mutated documents: an object exactly where nlohmann::json reads one") {
  std::mt19937 rng(7);
  // Bytes that make and break JSON; no tabs or line breaks, so that no run of whitespace
  // reaches the limits nlohmann does not have.
  const std::string alphabet =
      "{}[]:,\" \\/0123456789-+.eEtrufalsnbxuDdCc\x01\x7f\xc3\xa9\xed\xa0\xf0\x9f\xf4\x90\xff";
  std::uniform_int_distribution<size_t> pick_byte(0, alphabet.size() - 1);
  int objects = 0;
  int refused = 0;
  for (const std::string& doc : random_documents(rng, 400)) {
    if (doc.find_first_of("\n\t") != std::string::npos) continue;
    for (int trial = 0; trial < 8; ++trial) {
      std::string m = doc;
      const int edits = std::uniform_int_distribution<int>(1, 3)(rng);
      for (int e = 0; e < edits; ++e) {
        const size_t at = std::uniform_int_distribution<size_t>(0, m.size())(rng);
        switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
          case 0: m.insert(m.begin() + ptrdiff_t(at), alphabet[pick_byte(rng)]); break;
          case 1: if (at < m.size()) m.erase(at, 1); break;
          default: if (at < m.size()) m[at] = alphabet[pick_byte(rng)]; break;
        }
      }
      CAPTURE(m);
      const Reference expected = reference_reading(m);
      if (expected == Reference::unknown) continue;
      CHECK(is_object(m) == (expected == Reference::object));
      (expected == Reference::object ? objects : refused)++;
    }
  }
  // Both sides were exercised.
  CHECK(objects > 200);
  CHECK(refused > 200);
}

// Bytes a completion tries, most closing first: each state takes at least one of them when
// anything at all can follow it.
const std::string kClosers =
    "\"}]0:,truefalsn\\uDC\x80\x90\xa0\n{";

TEST_CASE("whatever it takes leads on to a whole object") {
  std::mt19937 rng(99);
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += char(b);
  for (int walk = 0; walk < 2000; ++walk) {
    JsonPrefix p;
    std::string text;
    const int steps = std::uniform_int_distribution<int>(0, 120)(rng);
    // A random walk over the bytes it takes ...
    for (int i = 0; i < steps && !p.complete(); ++i) {
      std::vector<uint8_t> options;
      for (int b = 0; b < 256; ++b) {
        JsonPrefix next = p;
        if (next.feed(uint8_t(b))) options.push_back(uint8_t(b));
      }
      REQUIRE_FALSE(options.empty());
      const uint8_t b = options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
      REQUIRE(p.feed(b));
      text += char(b);
    }
    // ... then the first closer it takes, until the object is whole.
    for (int i = 0; i < 400 && !p.complete(); ++i) {
      bool fed = false;
      for (const char c : kClosers) {
        JsonPrefix next = p;
        if (next.feed(static_cast<uint8_t>(c))) {
          p = next;
          text += c;
          fed = true;
          break;
        }
      }
      CAPTURE(text);
      REQUIRE(fed);
    }
    CAPTURE(text);
    REQUIRE(p.complete());
    // Random walks put bytes where nlohmann reads no whitespace limit, so it must agree.
    CHECK(reference_reading(text) != Reference::not_object);
  }
}

}  // namespace
}  // namespace parley::text
