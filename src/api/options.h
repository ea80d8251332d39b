// Caller-sized structs (DESIGN 3): the caller's struct_size says how much of the struct it
// has. The library reads or writes only that many bytes; fields it does not know must be 0.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "common/error.h"

namespace parley::api {

// Copies a caller's options struct. A size below this version's struct or non-zero bytes past
// it (fields of a newer header this library cannot honour) are invalid_argument.
template <typename T>
T read_options(const T* user, const char* name) {
  if (!user) fail(Status::invalid_argument, std::string(name) + " is NULL");
  const size_t size = user->struct_size;
  if (size < sizeof(T)) {
    fail(Status::invalid_argument, std::string(name) + ".struct_size is " + std::to_string(size) +
                                       "; expected at least " + std::to_string(sizeof(T)) +
                                       " (use the *_init macro)");
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(user);
  for (size_t i = sizeof(T); i < size; ++i) {
    if (bytes[i] != 0) {
      fail(Status::invalid_argument,
           std::string(name) + " sets a field this library does not know (non-zero byte at offset " +
               std::to_string(i) + "); the library is older than the header");
    }
  }
  T copy;
  std::memcpy(&copy, user, sizeof(T));
  return copy;
}

// Checks a caller's struct before the library fills it.
template <typename T>
void check_out_struct(const T* user, const char* name) {
  if (!user) fail(Status::invalid_argument, std::string(name) + " is NULL");
  if (user->struct_size < sizeof(T)) {
    fail(Status::invalid_argument, std::string(name) + "->struct_size is " +
                                       std::to_string(user->struct_size) + "; expected at least " +
                                       std::to_string(sizeof(T)));
  }
}

// Writes a filled struct into the caller's: our fields, zeros for any newer ones.
template <typename T>
void write_out_struct(T* user, const T& value) {
  const size_t size = user->struct_size;
  std::memset(reinterpret_cast<unsigned char*>(user) + sizeof(T), 0, size - sizeof(T));
  std::memcpy(user, &value, sizeof(T));
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
