/* parley.h as an outside C99 program sees it: compiled with -Wall -Wextra -Werror -pedantic. */
#include "parley.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  parley_engine_options eo;
  parley_session_options so;
  parley_generate_options go;
  char expected[32];

  parley_engine_options_init(&eo);
  parley_session_options_init(&so);
  parley_generate_options_init(&go);
  if (eo.struct_size != sizeof eo || so.struct_size != sizeof so || go.struct_size != sizeof go) {
    fprintf(stderr, "init macros did not set struct_size\n");
    return 1;
  }
  if (parley_version_number() != PARLEY_VERSION_NUMBER) {
    fprintf(stderr, "library %u, header %d\n", parley_version_number(), PARLEY_VERSION_NUMBER);
    return 1;
  }
  snprintf(expected, sizeof expected, "%d.%d.%d", PARLEY_VERSION_MAJOR, PARLEY_VERSION_MINOR,
           PARLEY_VERSION_PATCH);
  if (strcmp(parley_version(), expected) != 0) {
    fprintf(stderr, "parley_version() = %s, expected %s\n", parley_version(), expected);
    return 1;
  }
  parley_engine_close(NULL);   /* closing NULL is a no-op */
  parley_session_close(NULL);
  return 0;
}
