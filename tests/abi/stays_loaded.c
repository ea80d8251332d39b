/* A plugin host loads libparley with dlopen, opens an engine on a thread of its own and unloads
 * the library with dlclose while the engine is open (its CPU threads running). The library
 * must stay loaded: its threads run its code, and unmapping it would crash the host.
 *   parley-abi-stays-loaded LIBRARY MODEL   (exit 0: kept loaded; 77: MODEL is missing) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "parley.h"

typedef void (*options_init_fn)(parley_engine_options *, size_t);
typedef parley_status (*engine_open_fn)(const parley_engine_options *, parley_engine **);

struct opening {
  void *library;
  const char *model;
  parley_status status;
};

/* On a thread that ends before dlclose: nothing of it keeps the library in use. */
static void *open_engine(void *arg) {
  struct opening *o = (struct opening *)arg;
  options_init_fn init = (options_init_fn)dlsym(o->library, "parley_engine_options_init_sized");
  engine_open_fn open = (engine_open_fn)dlsym(o->library, "parley_engine_open");
  parley_engine_options options;
  parley_engine *engine = NULL;
  if (!init || !open) return NULL;
  init(&options, sizeof options);
  options.model_path = o->model;
  options.n_threads = 2;
  o->status = open(&options, &engine); /* left open */
  return NULL;
}

int main(int argc, char **argv) {
  struct opening o;
  pthread_t thread;
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY MODEL\n", argv[0]);
    return 2;
  }
  if (access(argv[2], R_OK) != 0) {
    printf("skipped: %s is missing\n", argv[2]);
    return 77;
  }
  o.library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  o.model = argv[2];
  o.status = PARLEY_E_INTERNAL; /* until the thread sets it */
  if (!o.library) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  if (pthread_create(&thread, NULL, open_engine, &o) != 0 || pthread_join(thread, NULL) != 0) {
    fprintf(stderr, "cannot run the opening thread\n");
    return 1;
  }
  if (o.status != PARLEY_OK) {
    fprintf(stderr, "parley_engine_open: status %d\n", (int)o.status);
    return 1;
  }
  dlclose(o.library);
  usleep(100 * 1000); /* the engine's threads go on meanwhile */
  if (!dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) {
    fprintf(stderr, "dlclose unloaded the library while an engine was open\n");
    return 1;
  }
  printf("the library stays loaded after dlclose\n");
  return 0;
}
