// Whether this binary is built with a sanitizer: such builds run unoptimized and instrumented,
// so the longest tests scale their work down (and say so).
#pragma once

namespace parley::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif
#else
constexpr bool kSanitizerBuild = false;
#endif

// ThreadSanitizer alone: a forked child of a threaded process may not start threads under it.
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizerBuild = true;
#else
constexpr bool kThreadSanitizerBuild = false;
#endif
#else
constexpr bool kThreadSanitizerBuild = false;
#endif

}  // namespace parley::test
