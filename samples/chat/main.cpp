// parley-chat: a console chat on a local model, and a one-shot mode for scripts.
#include <cstdio>
#include <exception>

#include "cli_args.h"
#include "console.h"
#include "one_shot.h"
#include "output.h"
#include "parley.h"

int main(int argc, char** argv) {
  chat::CliArgs args;
  try {
    args = chat::parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parley-chat: error: %s\n", e.what());
    return 1;
  }
  if (args.help) {
    std::printf("%s", chat::usage());
    return 0;
  }
  if (args.version) {
    std::printf("parley %s\n", parley_version());
    return 0;
  }

  parley_engine_options eo;
  parley_engine_options_init(&eo);
  eo.model_path = args.model.c_str();
  eo.device = args.device.c_str();
  eo.n_threads = args.n_threads;
  eo.kv_type = args.kv_type;
  eo.context_length = args.context_length;
  if (args.store_path) eo.store_path = args.store_path->c_str();
  eo.idle_spill_ms = args.idle_spill_ms;
  parley_engine* engine = nullptr;
  const parley_status st = parley_engine_open(&eo, &engine);
  if (st != PARLEY_OK) {
    chat::print_error("cannot open the model", st);
    return 1;
  }
  const int rc = args.prompt ? chat::run_one_shot(engine, args) : chat::run_console(engine, args);
  parley_engine_close(engine);
  return rc;
}
