#include "parley.h"

#define PARLEY_STR2(x) #x
#define PARLEY_STR(x) PARLEY_STR2(x)

extern "C" {

PARLEY_API const char* parley_version(void) {
  return PARLEY_STR(PARLEY_VERSION_MAJOR) "." PARLEY_STR(PARLEY_VERSION_MINOR) "." PARLEY_STR(
      PARLEY_VERSION_PATCH);
}

PARLEY_API uint32_t parley_version_number(void) { return PARLEY_VERSION_NUMBER; }

}  // extern "C"
