// The thread-local message behind parley_last_error().
#pragma once

#include <string>

namespace parley::api {

void set_last_error(std::string message);
// "function: detail detail2". Never throws: when memory is too short even for the message,
// the message is "out of memory".
void set_last_error(const char* function, const char* detail, const char* detail2 = "") noexcept;

}  // namespace parley::api
