// parley_last_error and parley_status_name: neither changes the thread's last error.
#include "api/last_error.h"

#include "common/shown_id.h"
#include "parley.h"

namespace {

thread_local std::string t_last_error;

}  // namespace

namespace parley::api {

// Messages quote what callers and files gave (paths, names, bytes a parser read): made one
// line of UTF-8 here, as parley_last_error() promises, whatever built them.
void set_last_error(std::string message) { t_last_error = one_line_text(message); }

void set_last_error(const char* function, const char* detail, const char* detail2) noexcept {
  try {
    std::string message(function);
    message.append(": ").append(detail).append(detail2);
    t_last_error = one_line_text(message);
  } catch (...) {
    t_last_error.clear();
    t_last_error.append("out of memory");  // shorter than any string's capacity: no allocation
  }
}

}  // namespace parley::api

extern "C" {

PARLEY_API const char* parley_last_error(void) { return t_last_error.c_str(); }

PARLEY_API const char* parley_status_name(parley_status s) {
  switch (s) {
    case PARLEY_OK: return "PARLEY_OK";
    case PARLEY_E_INVALID_ARGUMENT: return "PARLEY_E_INVALID_ARGUMENT";
    case PARLEY_E_NOT_FOUND: return "PARLEY_E_NOT_FOUND";
    case PARLEY_E_IO: return "PARLEY_E_IO";
    case PARLEY_E_BAD_MODEL: return "PARLEY_E_BAD_MODEL";
    case PARLEY_E_UNSUPPORTED: return "PARLEY_E_UNSUPPORTED";
    case PARLEY_E_OUT_OF_MEMORY: return "PARLEY_E_OUT_OF_MEMORY";
    case PARLEY_E_CONTEXT_FULL: return "PARLEY_E_CONTEXT_FULL";
    case PARLEY_E_BUSY: return "PARLEY_E_BUSY";
    case PARLEY_E_CANCELLED: return "PARLEY_E_CANCELLED";
    case PARLEY_E_CORRUPT: return "PARLEY_E_CORRUPT";
    case PARLEY_E_MODEL_MISMATCH: return "PARLEY_E_MODEL_MISMATCH";
    case PARLEY_E_STORAGE: return "PARLEY_E_STORAGE";
    case PARLEY_E_BACKEND: return "PARLEY_E_BACKEND";
    case PARLEY_E_INTERNAL: return "PARLEY_E_INTERNAL";
    case PARLEY_E_MISUSE: return "PARLEY_E_MISUSE";
    default: return "PARLEY_E_UNKNOWN";
  }
}

}  // extern "C"
