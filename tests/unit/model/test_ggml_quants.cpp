// ggml's 4- to 6-bit block types converted at load (Q5_0 to Q5_1, Q4_K to Q4_1, Q5_K to Q5_1,
// Q6_K to Q8_0) and those held as they are (Q4_0, Q4_1, Q5_1): hand-built blocks whose values
// follow from ggml's dequantization formulas, and random blocks from the test-side writer.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/ggml_quants.h"
#include "support/ggml_blocks.h"

namespace {

using parley::model::convert_row;
using parley::model::convertible_block_type;
using parley::model::DType;
using parley::model::f16_to_f32;
using parley::model::GgmlBlockType;
using parley::model::Q4_1Block;
using parley::model::Q5_1Block;
using parley::model::Q8Block;

constexpr uint16_t kF16Quarter = 0x3400, kF16Half = 0x3800, kF16One = 0x3c00, kF16MinusTwo = 0xc000;
constexpr uint16_t kF16Max = 0x7bff;  // 65504

const GgmlBlockType& type_of(uint32_t id) {
  const GgmlBlockType* t = convertible_block_type(id);
  REQUIRE(t != nullptr);
  return *t;
}

// The converted row's blocks and the values they stand for (model::dequantize).
struct Converted {
  std::vector<std::byte> bytes;
  std::vector<float> values;
  bool in_range = false;
  const Q8Block* q8() const { return reinterpret_cast<const Q8Block*>(bytes.data()); }
  const Q4_1Block* q4() const { return reinterpret_cast<const Q4_1Block*>(bytes.data()); }
  const Q5_1Block* q5() const { return reinterpret_cast<const Q5_1Block*>(bytes.data()); }
};

Converted convert(uint32_t id, const std::string& bytes, size_t n_values) {
  const GgmlBlockType& t = type_of(id);
  Converted c;
  c.bytes.resize(parley::model::row_bytes(t.held, n_values));
  c.in_range = convert_row(t, reinterpret_cast<const std::byte*>(bytes.data()), n_values,
                           c.bytes.data());
  c.values.resize(n_values);
  parley::model::dequantize(t.held, c.bytes.data(), n_values, c.values.data());
  return c;
}

// Every converted value within half a step of its block's Q8_0 scale of `want` (the float
// slack covers the product d * q rounding to float).
void check_within_half_step(const Converted& got, const std::vector<float>& want) {
  REQUIRE(got.values.size() == want.size());
  size_t worst_at = 0;
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double step = f16_to_f32(got.q8()[i / 32].d);
    const double err = std::fabs(double(got.values[i]) - double(want[i])) / step;
    if (step > 0 && err > worst) worst = err, worst_at = i;
    if (step == 0) CHECK(want[i] == 0.0f);
  }
  INFO("worst at value " << worst_at << ": " << want[worst_at] << " became "
                         << got.values[worst_at]);
  CHECK(worst <= 0.5 + 1e-4);
}

// Q4_1 / Q5_1 blocks from Q4_K / Q5_K: each value within F16's rounding of its sub-block's
// scale (times the largest code, 15 or 31) and minimum, 2^-11 of each, of `want`.
void check_within_f16_rounding(const Converted& got, const std::vector<float>& want,
                               DType held) {
  REQUIRE(got.values.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool q5 = held == DType::q5_1;
    const uint16_t d = q5 ? got.q5()[i / 32].d : got.q4()[i / 32].d;
    const uint16_t m = q5 ? got.q5()[i / 32].m : got.q4()[i / 32].m;
    const double bound = ((q5 ? 31.0 : 15.0) * std::fabs(f16_to_f32(d)) +
                          std::fabs(f16_to_f32(m))) * 0x1.0p-11 * 1.001 + 1e-30;
    const double err = std::fabs(double(got.values[i]) - double(want[i]));
    if (!(err <= bound)) {
      if (bad++ < 5) CHECK_MESSAGE(err <= bound, "value " << i << ": " << got.values[i]
                                                          << " for " << want[i]);
    }
  }
  CHECK(bad == 0);
}

void put_u16(std::string& s, size_t at, uint16_t v) { std::memcpy(s.data() + at, &v, 2); }

}  // namespace

TEST_CASE("ggml blocks: the types converted at load, their block sizes, held types, exactness") {
  const struct {
    uint32_t id;
    const char* name;
    uint32_t values, bytes;
    DType held;
    bool exact;
  } want[] = {{6, "Q5_0", 32, 22, DType::q5_1, true},
              {12, "Q4_K", 256, 144, DType::q4_1, false},
              {13, "Q5_K", 256, 176, DType::q5_1, false},
              {14, "Q6_K", 256, 210, DType::q8_0, false}};
  for (const auto& w : want) {
    CAPTURE(w.name);
    const GgmlBlockType& t = type_of(w.id);
    CHECK(t.name == w.name);
    CHECK(t.block_values == w.values);
    CHECK(t.block_bytes == w.bytes);
    CHECK(t.held == w.held);
    CHECK(t.exact == w.exact);
    CHECK(std::string(parley::model::convertible_block_type_names()).find(w.name) !=
          std::string::npos);
  }
  // Q4_0 (2), Q4_1 (3) and Q5_1 (7) are held as they are; the others are not block types
  // that load.
  for (uint32_t other : {0u, 1u, 2u, 3u, 7u, 8u, 10u, 11u, 15u, 20u, 30u, 99u}) {
    CAPTURE(other);
    CHECK(convertible_block_type(other) == nullptr);
  }
}

TEST_CASE("ggml blocks: Q5_0 becomes Q5_1 with its scale, codes and fifth bits, minimum -16d") {
  SUBCASE("bit j of the 32-bit word after d is value j's fifth bit, minus 16") {
    std::string b(22, '\0');
    put_u16(b, 0, kF16One);
    const uint32_t qh = 0x80000001u;  // values 0 and 31
    std::memcpy(b.data() + 2, &qh, 4);
    b[6 + 3] = char(0x5a);  // value 3: 0xa, value 19: 0x5
    const auto q = convert(6, b, 32);
    CHECK(q.in_range);
    CHECK(q.q5()[0].d == kF16One);
    CHECK(f16_to_f32(q.q5()[0].m) == -16.0f);
    CHECK(std::memcmp(q.q5()[0].qh, &qh, 4) == 0);
    CHECK(q.q5()[0].q[3] == 0x5a);
    for (int j = 0; j < 32; ++j) {
      CAPTURE(j);
      const int want = j == 0 || j == 31 ? 0 : j == 3 ? 10 - 16 : j == 19 ? 5 - 16 : -16;
      CHECK(q.values[size_t(j)] == float(want));
    }
  }
  SUBCASE("the minimum is exact for every finite scale up to 65504 / 16") {
    for (uint16_t d = 0; d < 0x7c00; ++d) {
      std::string b(22, '\0');
      put_u16(b, 0, d);
      const auto q = convert(6, b, 32);
      const double want = -16.0 * double(f16_to_f32(d));
      if (std::fabs(want) <= 65504.0) {
        if (!q.in_range || double(f16_to_f32(q.q5()[0].m)) != want) {
          CHECK_MESSAGE(false, "scale bits " << d);
          break;
        }
      } else if (q.in_range) {
        CHECK_MESSAGE(false, "scale bits " << d << ": -16d beyond F16 not reported");
        break;
      }
    }
  }
}

TEST_CASE("ggml blocks: Q4_0, Q4_1 and Q5_1 are held as they are and decode as ggml's formulas") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(512);
  for (float& v : x) v = normal(rng);
  x[40] = -0.7f;
  for (const auto& [id, held] : {std::pair{parley::test::ggml_block_type::Q4_0, DType::q4_0},
                                 std::pair{parley::test::ggml_block_type::Q4_1, DType::q4_1},
                                 std::pair{parley::test::ggml_block_type::Q5_1, DType::q5_1}}) {
    CAPTURE(parley::test::ggml_block_type_name(id));
    const auto blocks = parley::test::encode_ggml_blocks(id, x);
    REQUIRE(blocks.bytes.size() == parley::model::row_bytes(held, x.size()));
    std::vector<float> got(x.size());
    parley::model::dequantize(held, reinterpret_cast<const std::byte*>(blocks.bytes.data()),
                              x.size(), got.data());
    CHECK(got == blocks.values);
  }
}

TEST_CASE("ggml blocks: Q4_K and Q5_K become Q4_1 and Q5_1 per sub-block; Q6_K Q8_0") {
  // Sub-block 1 (scale 3, minimum 1) takes the 6-bit path of bytes 1 and 5; sub-block 5
  // (scale 37, minimum 50) the split path: low nibbles in byte 9, top bits in bytes 1 and 5.
  auto k_scales = [](std::string& b) {
    put_u16(b, 0, kF16One);   // d
    put_u16(b, 2, kF16Half);  // dmin
    b[4 + 1] = char(3 | (37 >> 4) << 6);
    b[4 + 5] = char(1 | (50 >> 4) << 6);
    b[4 + 9] = char((37 & 0xf) | (50 & 0xf) << 4);
  };
  auto k_want = [](float sub5_value0, float sub1_value2) {
    std::vector<float> want(256, 0.0f);
    for (int l = 0; l < 32; ++l) want[size_t(32 + l)] = -0.5f, want[size_t(160 + l)] = -25.0f;
    want[160] = sub5_value0;
    want[34] = sub1_value2;
    return want;
  };
  SUBCASE("Q4_K: d * scale * code - dmin * min, sub-blocks 2i and 2i+1 share 32 bytes") {
    std::string b(144, '\0');
    k_scales(b);
    b[16 + 64] = char(0x70);  // sub-block 4 value 0: code 0; sub-block 5 value 0: code 7
    b[16 + 2] = char(0x90);   // sub-block 1 value 2: code 9
    b[16 + 18] = char(0x0c);  // sub-block 0 value 18: code 12 (scale 0: value 0)
    const auto q = convert(12, b, 256);
    CHECK(q.in_range);
    // Every scale and minimum here is exact in F16: so are the values.
    const auto want = k_want(37 * 7 - 25.0f, 3 * 9 - 0.5f);
    for (size_t i = 0; i < 256; ++i) {
      CAPTURE(i);
      CHECK(q.values[i] == want[i]);
    }
    CHECK(f16_to_f32(q.q4()[5].d) == 37.0f);
    CHECK(f16_to_f32(q.q4()[5].m) == -25.0f);
    // The codes themselves, in Q4_1's order: value j low nibble, j + 16 high, of byte j.
    CHECK(q.q4()[5].q[0] == 0x07);
    CHECK(q.q4()[1].q[2] == 0x09);
    CHECK(q.q4()[0].q[2] == 0xc0);
  }
  SUBCASE("Q4_K and Q5_K: a scale or minimum beyond F16's range is reported") {
    for (const auto& [type, bytes] : {std::pair{12u, size_t(144)}, std::pair{13u, size_t(176)}}) {
      CAPTURE(type);
      for (const bool minimum : {false, true}) {
        CAPTURE(minimum);
        std::string b(bytes, '\0');
        put_u16(b, minimum ? 2 : 0, kF16Max);
        b[4 + 2] = char(2);  // sub-block 2: scale 2 (or, below, minimum 2)
        b[4 + 6] = char(2);
        CHECK_FALSE(convert(type, b, 256).in_range);
      }
      std::string fits(bytes, '\0');
      put_u16(fits, 0, kF16Max);
      put_u16(fits, 2, kF16Max);
      fits[4 + 2] = char(1), fits[4 + 6] = char(1);  // 65504 * 1 still fits
      CHECK(convert(type, fits, 256).in_range);
    }
  }
  SUBCASE("Q5_K: fifth bits before the codes, bit j of byte l for value l of sub-block j") {
    std::string b(176, '\0');
    k_scales(b);
    b[16 + 0] = char(1 << 5);   // sub-block 5 value 0
    b[16 + 2] = char(1 << 1);   // sub-block 1 value 2
    b[48 + 64] = char(0x70);
    b[48 + 2] = char(0x90);
    const auto q = convert(13, b, 256);
    CHECK(q.in_range);
    const auto want = k_want(37 * 23 - 25.0f, 3 * 25 - 0.5f);  // exact in F16, as for Q4_K
    for (size_t i = 0; i < 256; ++i) {
      CAPTURE(i);
      CHECK(q.values[i] == want[i]);
    }
    // Q5_1's order: low four bits as Q4_1's, the fifth bit of value l bit l of the word.
    CHECK(q.q5()[5].q[0] == 0x07);
    CHECK(q.q5()[5].qh[0] == 0x01);
    CHECK(q.q5()[1].q[2] == 0x09);
    CHECK(q.q5()[1].qh[0] == 0x04);
    CHECK(f16_to_f32(q.q5()[5].d) == 37.0f);
  }
  SUBCASE("Q6_K: d * scale * (code - 32), 16 signed scales, d last") {
    std::string b(210, '\0');
    put_u16(b, 208, kF16Quarter);
    b[192 + 2] = char(3);    // values 32-47
    b[192 + 15] = char(-5);  // values 240-255
    // Value 244 (second half, k = 3, l = 20): high nibble of ql[64 + 20 + 32], top bits 6-7
    // of qh[32 + 20]. Value 33 (first half, k = 1, l = 1): low nibble of ql[1 + 32], bits
    // 2-3 of qh[1].
    b[116] = char(0xb0);
    b[128 + 52] = char(0x80);
    b[33] = char(0x0f);
    b[128 + 1] = char(0x04);
    std::vector<float> want(256, 0.0f);
    for (int i = 32; i < 48; ++i) want[size_t(i)] = 0.25f * 3 * -32;
    for (int i = 240; i < 256; ++i) want[size_t(i)] = 0.25f * -5 * -32;
    want[244] = 0.25f * -5 * ((11 | 2 << 4) - 32);
    want[33] = 0.25f * 3 * ((15 | 1 << 4) - 32);
    check_within_half_step(convert(14, b, 256), want);
  }
}

// A Q6_K block of one code and one scale throughout: every value d * scale * (code - 32).
std::string q6_k_block(uint16_t d, int8_t scale, int code) {
  std::string b(210, '\0');
  const int low = code & 0x0f, high = code >> 4;
  for (int j = 0; j < 128; ++j) b[size_t(j)] = char(low | low << 4);
  for (int j = 0; j < 64; ++j) b[size_t(128 + j)] = char(high * 0x55);  // bits 2k, k = 0-3
  for (int j = 0; j < 16; ++j) b[size_t(192 + j)] = char(scale);
  put_u16(b, 208, d);
  return b;
}

// A Q8_0 scale is amax / 127 in F16: finite Q6_K values past 127 * 65504 (d = 65504, scales
// 127, codes +-31 reach 2.6e8) would get an infinite one, and read back as NaN.
TEST_CASE("ggml blocks: Q6_K values that need a Q8_0 scale beyond F16's range are reported") {
  SUBCASE("d = 65504, scales 127, codes +-31") {
    CHECK_FALSE(convert(14, q6_k_block(kF16Max, 127, 63), 256).in_range);
    CHECK_FALSE(convert(14, q6_k_block(kF16Max, 127, 1), 256).in_range);
    CHECK_FALSE(convert(14, q6_k_block(kF16Max, -128, 0), 256).in_range);
  }
  SUBCASE("127 * 65504 itself still fits, the next Q6_K value up does not") {
    const auto q = convert(14, q6_k_block(kF16Max, 127, 33), 256);
    CHECK(q.in_range);
    CHECK(q.q8()[0].d == kF16Max);
    CHECK(q.q8()[7].q[31] == 127);
    CHECK(q.values[255] == 127.0f * 65504.0f);
    CHECK_FALSE(convert(14, q6_k_block(kF16Max, 127, 34), 256).in_range);
  }
  SUBCASE("d = 2100, scales 127, codes 31: 8.3e6, in range") {
    const uint16_t d2100 = 0x681a;
    REQUIRE(f16_to_f32(d2100) == 2100.0f);
    const auto q = convert(14, q6_k_block(d2100, 127, 63), 256);
    CHECK(q.in_range);
    check_within_half_step(q, std::vector<float>(256, 2100.0f * 127 * 31));
  }
  SUBCASE("a later block of a row is checked too") {
    const std::string row = q6_k_block(kF16One, 3, 40) + q6_k_block(kF16Max, 127, 63);
    CHECK_FALSE(convert(14, row, 512).in_range);
  }
}

TEST_CASE("ggml blocks: random blocks of every type convert to what they stand for") {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(1024);
  for (float& v : x) v = normal(rng);
  x[5] = 0.9f;  // an outlier, as trained weights have
  std::fill(x.begin() + 512, x.begin() + 544, 0.0f);  // a block of zeros
  std::vector<float> tiny(512);  // scales among F16's subnormals, which round coarsely
  for (float& v : tiny) v = normal(rng) * 1e-4f;
  x.insert(x.end(), tiny.begin(), tiny.end());
  for (uint32_t id : parley::test::kGgmlBlockTypes) {
    if (id == parley::test::ggml_block_type::Q4_0 || id == parley::test::ggml_block_type::Q4_1 ||
        id == parley::test::ggml_block_type::Q5_1) {
      continue;  // held as they are
    }
    CAPTURE(parley::test::ggml_block_type_name(id));
    const auto blocks = parley::test::encode_ggml_blocks(id, x);
    REQUIRE(blocks.bytes.size() == x.size() / type_of(id).block_values * type_of(id).block_bytes);
    const auto q = convert(id, blocks.bytes, x.size());
    CHECK(q.in_range);
    if (type_of(id).exact) {
      for (size_t i = 0; i < x.size(); ++i) {
        CAPTURE(i);
        CHECK(q.values[i] == blocks.values[i]);
      }
    } else if (type_of(id).held != DType::q8_0) {
      check_within_f16_rounding(q, blocks.values, type_of(id).held);
    } else {
      check_within_half_step(q, blocks.values);
    }
  }
}

TEST_CASE("ggml blocks: a NaN or infinite scale gives zeros, not undefined conversions") {
  for (uint16_t bad : {uint16_t(0x7e00), uint16_t(0x7c00), uint16_t(0xfc00)}) {  // NaN, +-inf
    CAPTURE(bad);
    std::string b(210, '\0');  // Q6_K: codes 32 + 5 (value 0 of each 16 with scale 1)
    for (int j = 0; j < 128; ++j) b[size_t(j)] = char(0x55);
    for (int j = 0; j < 16; ++j) b[size_t(192 + j)] = char(1);
    put_u16(b, 208, bad);
    const auto q = convert(14, b, 256);
    for (int blk = 0; blk < 8; ++blk) {
      for (int j = 0; j < 32; ++j) CHECK(q.q8()[blk].q[j] == 0);
    }
  }
}
