// Whether this binary is built with a sanitizer: such builds run unoptimized and instrumented,
// so the longest tests scale their work down (and say so).
#pragma once

// GCC names a sanitizer with a macro, clang answers __has_feature.
#if defined(__has_feature)
#define PARLEY_TEST_HAS_FEATURE(name) __has_feature(name)
#else
#define PARLEY_TEST_HAS_FEATURE(name) 0
#endif

namespace parley::test {

#if defined(__SANITIZE_THREAD__) || PARLEY_TEST_HAS_FEATURE(thread_sanitizer)
constexpr bool kThreadSanitizerBuild = true;
#else
constexpr bool kThreadSanitizerBuild = false;
#endif

#if defined(__SANITIZE_ADDRESS__) || PARLEY_TEST_HAS_FEATURE(address_sanitizer)
constexpr bool kAddressSanitizerBuild = true;
#else
constexpr bool kAddressSanitizerBuild = false;
#endif

constexpr bool kSanitizerBuild = kAddressSanitizerBuild || kThreadSanitizerBuild;

}  // namespace parley::test
