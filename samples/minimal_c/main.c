/* The shortest complete Parley program: open a model, send one message, print the reply. */
#include <stdio.h>

#include "parley.h"

static int print_text(const char *utf8, size_t len, void *user) {
  (void)user;
  fwrite(utf8, 1, len, stdout);
  return 0; /* 0 = go on */
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL [MESSAGE]\n", argv[0]);
    return 1;
  }
  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = argv[1];

  parley_engine *engine = NULL;
  parley_session *session = NULL;
  parley_status st = parley_engine_open(&eo, &engine);
  if (st == PARLEY_OK) st = parley_session_create(engine, NULL, &session);
  if (st == PARLEY_OK) {
    st = parley_session_send(session, argc > 2 ? argv[2] : "Hello!", NULL, print_text, NULL, NULL);
    printf("\n");
  }
  if (st != PARLEY_OK) fprintf(stderr, "%s: %s\n", parley_status_name(st), parley_last_error());
  parley_session_close(session);
  parley_engine_close(engine);
  return st == PARLEY_OK ? 0 : 1;
}
