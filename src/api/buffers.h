// The buffer rule (parley.h): write at most cap elements, report the full size in *needed,
// return OK even when cut; cap = 0 only asks for the size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "api/api_guard.h"

namespace parley::api {

inline void write_ids(const std::vector<int32_t>& ids, int32_t* out, size_t cap, size_t* needed) {
  check_arg(needed, "n_needed is NULL");
  check_arg(out || cap == 0, "ids is NULL but cap is not 0");
  *needed = ids.size();
  std::copy_n(ids.begin(), std::min(cap, ids.size()), out);
}

// A cut string ends on a code point boundary, so what the caller gets is still valid UTF-8.
inline void write_string(std::string_view s, char* out, size_t cap, size_t* needed) {
  check_arg(needed, "needed is NULL");
  check_arg(out || cap == 0, "buf is NULL but cap is not 0");
  *needed = s.size() + 1;
  if (cap == 0) return;
  size_t n = std::min(s.size(), cap - 1);
  if (n < s.size()) {
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  }
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

}  // namespace parley::api
