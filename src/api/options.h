// Caller-sized structs (DESIGN 3): the caller's struct_size says how much of the struct it
// has. The library reads or writes only that many bytes; fields it does not know must be 0.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "common/error.h"
#include "parley.h"

namespace parley::api {

// The struct_size values a caller may pass besides this version's sizeof (or more): the sizes
// a struct had in earlier versions, whose programs keep working (the library then reads or
// fills only that many bytes). Each struct lists its sizes here when it grows.
template <typename T>
constexpr bool is_earlier_size(size_t) {
  return false;
}
template <>
constexpr bool is_earlier_size<parley_engine_options>(size_t size) {
  return size == offsetof(parley_engine_options, on_load_progress);  // 0.1 - 0.9
}
template <>
constexpr bool is_earlier_size<parley_engine_stats>(size_t size) {
  return size == offsetof(parley_engine_stats, decode_steps);  // 0.1
}

template <>
constexpr bool is_earlier_size<parley_generate_options>(size_t size) {
  return size == offsetof(parley_generate_options, stop) ||        // 0.1, 0.2
         size == offsetof(parley_generate_options, logit_bias) ||  // 0.3
         size == offsetof(parley_generate_options, json_schema);  // 0.4 - 0.11
}
template <>
constexpr bool is_earlier_size<parley_turn_stats>(size_t size) {
  return size == offsetof(parley_turn_stats, stop_reason);  // 0.1, 0.2
}
template <>
constexpr bool is_earlier_size<parley_session_info>(size_t size) {
  return size == offsetof(parley_session_info, chat_template);  // 0.1 - 0.7
}

// No version's struct grows this large: a bigger struct_size is a field never set (garbage),
// and taking it would read or zero memory far past the caller's struct.
inline constexpr size_t kMaxStructSize = PARLEY_MAX_STRUCT_SIZE;

template <typename T>
bool is_known_size(size_t size) {
  return (size >= sizeof(T) && size <= kMaxStructSize) || is_earlier_size<T>(size);
}

template <typename T>
std::string size_refusal(const char* name, size_t size) {
  std::string message = std::string(name) + "->struct_size is " + std::to_string(size) +
                        "; expected " + std::to_string(sizeof(T)) +
                        " (sizeof in this version; use the *_init macro for options) or the " +
                        "size of an earlier version";
  if (size > kMaxStructSize) {
    message += " (no version's struct is larger than " + std::to_string(kMaxStructSize) +
               " bytes: is struct_size set?)";
  }
  return message;
}

// Copies a caller's options struct. Fields past a smaller (earlier version's) struct_size take
// their defaults (0). A size no version had, or non-zero bytes past this version's fields (a
// newer header's fields this library cannot honour), are invalid_argument.
template <typename T>
T read_options(const T* user, const char* name) {
  if (!user) fail(Status::invalid_argument, std::string(name) + " is NULL");
  const size_t size = user->struct_size;
  if (!is_known_size<T>(size)) fail(Status::invalid_argument, size_refusal<T>(name, size));
  const auto* bytes = reinterpret_cast<const unsigned char*>(user);
  for (size_t i = sizeof(T); i < size; ++i) {
    if (bytes[i] != 0) {
      fail(Status::invalid_argument,
           std::string(name) + " sets a field this library does not know (non-zero byte at offset " +
               std::to_string(i) + "); the library is older than the header");
    }
  }
  T copy;
  std::memset(&copy, 0, sizeof(T));
  std::memcpy(&copy, user, std::min(size, sizeof(T)));
  return copy;
}

// Checks a caller's struct before the library fills it.
template <typename T>
void check_out_struct(const T* user, const char* name) {
  if (!user) fail(Status::invalid_argument, std::string(name) + " is NULL");
  if (!is_known_size<T>(user->struct_size)) {
    fail(Status::invalid_argument, size_refusal<T>(name, user->struct_size));
  }
}

// Writes a filled struct into the caller's: as many of our fields as it has room for, zeros
// for any newer ones.
template <typename T>
void write_out_struct(T* user, const T& value) {
  const size_t size = user->struct_size;
  auto* bytes = reinterpret_cast<unsigned char*>(user);
  if (size > sizeof(T)) std::memset(bytes + sizeof(T), 0, size - sizeof(T));
  std::memcpy(bytes, &value, std::min(size, sizeof(T)));
  user->struct_size = size;
}

// Fills a caller's struct of `size` bytes with defaults (the *_init_sized entry points).
template <typename T>
void init_sized(T* user, size_t size, const T& defaults) {
  if (!user || size < sizeof(size_t)) return;
  std::memset(user, 0, size);
  std::memcpy(user, &defaults, size < sizeof(T) ? size : sizeof(T));
  user->struct_size = size;
}

}  // namespace parley::api
