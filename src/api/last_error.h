// The thread-local message behind parley_last_error().
#pragma once

#include <string>

namespace parley::api {

void set_last_error(std::string message);

}  // namespace parley::api
