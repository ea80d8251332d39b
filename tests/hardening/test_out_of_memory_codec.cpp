// Out of memory inside the KV codec: every allocation that encoding and decoding a block make
// on a new thread (zstd's contexts included, which each thread creates on first use) fails in
// turn, alone and with every later one. Each call then gives exactly the result it gives with
// memory to spare, or reports out of memory: a blob is never taken for damaged, and zstd's
// own failures are among those reported.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "failing_alloc.h"
#include "fuzz/kv_codec_samples.h"
#include "store/kv_codec.h"

using namespace parley;
using namespace parley::store;

namespace {

constexpr uint64_t kFingerprint = 0x5eed5eed5eed5eedull;

struct Outcome {
  bool ok = false;
  Status status = Status::ok;
  std::string message;
};

// Runs `call` on a thread of its own with the n-th allocation failing (none for UINT64_MAX).
Outcome run_with_failure(uint64_t n, bool sticky, const std::function<void()>& call,
                         uint64_t* allocations = nullptr) {
  Outcome outcome;
  std::thread([&] {
    parley::test::arm_allocation_failure(n, sticky);
    try {
      call();
      outcome.ok = true;
    } catch (const Error& e) {
      outcome.status = e.status();
      outcome.message = e.what();
    } catch (const std::bad_alloc&) {
      outcome.status = Status::out_of_memory;
      outcome.message = "std::bad_alloc";
    }
    const uint64_t counted = parley::test::disarm_allocation_failure();
    if (allocations) *allocations = counted;
  }).join();
  return outcome;
}

// Every failure point of `call`, alone and sticky; `check` looks at each successful result.
// Returns how many failures were reported from inside zstd.
int fail_each_allocation(const std::function<void()>& call, const std::function<void()>& check) {
  uint64_t total = 0;
  REQUIRE(run_with_failure(UINT64_MAX, false, call, &total).ok);
  check();
  int zstd_failures = 0;
  for (bool sticky : {false, true}) {
    for (uint64_t n = 1; n <= total; ++n) {
      CAPTURE(n);
      CAPTURE(sticky);
      const Outcome outcome = run_with_failure(n, sticky, call);
      if (outcome.ok) {
        check();
        continue;
      }
      CHECK_MESSAGE(outcome.status == Status::out_of_memory, outcome.message);
      if (outcome.message.find("zstd") != std::string::npos) ++zstd_failures;
    }
  }
  MESSAGE(total << " allocations; " << zstd_failures << " failures reported by zstd");
  return zstd_failures;
}

}  // namespace

TEST_CASE("out of memory while encoding a KV block: the exact blob, or out of memory") {
  const kv::BlockLayout layout(kv::KvType::int8, kv::KvShape{2, 2, 64});
  const auto source = parley::test::sample_kv_block(layout, 11);
  const KvCodecOptions options{1, true};
  const auto expected = encode_kv_block(layout, kFingerprint, source.data(), kv::kBlockTokens,
                                        options);
  std::vector<std::byte> blob;
  const int zstd_failures = fail_each_allocation(
      [&] {
        blob = encode_kv_block(layout, kFingerprint, source.data(), kv::kBlockTokens, options);
      },
      [&] { CHECK(blob == expected); });
  // Creating the context and sizing its workspace, each failed alone. (Failed sticky, the
  // message itself cannot be allocated: std::bad_alloc.)
  CHECK(zstd_failures >= 2);
}

TEST_CASE("out of memory while decoding a KV block: the exact block, or out of memory") {
  const kv::BlockLayout layout(kv::KvType::int8, kv::KvShape{2, 2, 64});
  const auto source = parley::test::sample_kv_block(layout, 12);
  const auto blob = encode_kv_block(layout, kFingerprint, source.data(), kv::kBlockTokens,
                                    KvCodecOptions{1, true});
  const std::vector<std::byte> untouched(layout.block_bytes(), std::byte{0x5A});
  const auto expected = parley::test::with_slots(layout, untouched, source, kv::kBlockTokens);
  std::vector<std::byte> target = untouched;  // sized here: only the codec allocates below
  const int zstd_failures = fail_each_allocation(
      [&] {
        std::copy(untouched.begin(), untouched.end(), target.begin());
        decode_kv_block(blob, layout, kFingerprint, target.data());
      },
      [&] { CHECK(target == expected); });
  // Creating the context, failed alone.
  CHECK(zstd_failures >= 1);
}
