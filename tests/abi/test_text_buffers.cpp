// parley_tokenize / parley_detokenize and the buffer rule: cap = 0 asks for the size, a short
// buffer gets a cut result and the full size, OK either way.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "abi_fixture.h"
#include "parley.h"

using namespace parley::test;

TEST_CASE("tokenize follows the buffer rule") {
  EngineHandle e(tiny_chat_model());
  size_t n = 0;
  REQUIRE(parley_tokenize(e, "a b c", 1, nullptr, 0, &n) == PARLEY_OK);
  REQUIRE(n >= 2);
  std::vector<int32_t> all(n);
  REQUIRE(parley_tokenize(e, "a b c", 1, all.data(), all.size(), &n) == PARLEY_OK);
  CHECK(all[0] == 1);  // BOS of the SPM vocabulary

  std::vector<int32_t> two(2, -7);
  size_t needed = 0;
  REQUIRE(parley_tokenize(e, "a b c", 1, two.data(), two.size(), &needed) == PARLEY_OK);
  CHECK(needed == all.size());
  CHECK(two[0] == all[0]);
  CHECK(two[1] == all[1]);

  REQUIRE(parley_tokenize(e, "a b c", 0, nullptr, 0, &needed) == PARLEY_OK);
  CHECK(needed == all.size() - 1);
  REQUIRE(parley_tokenize(e, "", 0, nullptr, 0, &needed) == PARLEY_OK);
  CHECK(needed == 0);
}

TEST_CASE("tokenize and detokenize reject bad arguments") {
  EngineHandle e(tiny_chat_model());
  size_t n = 0;
  int32_t ids[4];
  char buf[16];
  CHECK(parley_tokenize(e, nullptr, 0, ids, 4, &n) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_tokenize(e, "a", 0, nullptr, 4, &n) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_tokenize(e, "a", 0, ids, 4, nullptr) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_tokenize(e, "\xED\xA0\x80", 0, ids, 4, &n) == PARLEY_E_INVALID_ARGUMENT);  // surrogate
  CHECK(std::strstr(parley_last_error(), "UTF-8") != nullptr);

  const int32_t bad[] = {5, 320};
  CHECK(parley_detokenize(e, bad, 2, buf, sizeof buf, &n) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(std::strstr(parley_last_error(), "320") != nullptr);
  const int32_t negative[] = {-1};
  CHECK(parley_detokenize(e, negative, 1, buf, sizeof buf, &n) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_detokenize(e, nullptr, 1, buf, sizeof buf, &n) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_detokenize(e, bad, 1, nullptr, 4, &n) == PARLEY_E_INVALID_ARGUMENT);
  CHECK(parley_detokenize(e, bad, 1, buf, sizeof buf, nullptr) == PARLEY_E_INVALID_ARGUMENT);
}

TEST_CASE("detokenize follows the buffer rule and cuts on a code point boundary") {
  EngineHandle e(tiny_chat_model());
  // "é" is two byte-fallback tokens in this vocabulary: <0xC3> <0xA9> (ids 3 + byte).
  const int32_t ids[] = {3 + 'x', 3 + 0xC3, 3 + 0xA9};
  size_t needed = 0;
  REQUIRE(parley_detokenize(e, ids, 3, nullptr, 0, &needed) == PARLEY_OK);
  CHECK(needed == 4);  // "x" + 2 bytes + NUL
  char full[8];
  REQUIRE(parley_detokenize(e, ids, 3, full, sizeof full, &needed) == PARLEY_OK);
  CHECK(std::string(full) == "x\xC3\xA9");

  char cut[3] = {'?', '?', '?'};
  REQUIRE(parley_detokenize(e, ids, 3, cut, sizeof cut, &needed) == PARLEY_OK);
  CHECK(needed == 4);
  CHECK(std::string(cut) == "x");  // not "x\xC3": half a code point is never handed out

  REQUIRE(parley_detokenize(e, ids, 0, full, sizeof full, &needed) == PARLEY_OK);
  CHECK(needed == 1);
  CHECK(full[0] == '\0');
}
