// parley-chat: a console chat on a local model, and a one-shot mode for scripts.
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include "cli_args.h"
#include "console.h"
#include "load_meter.h"
#include "one_shot.h"
#include "output.h"
#include "parley.h"

namespace {

// What parley_engine_open failed at, in words, after its status: the store's statuses name the
// store (the model is fine then), the model's name the model.
std::string open_failure(const chat::CliArgs& args, parley_status st) {
  switch (st) {
    case PARLEY_E_STORAGE:
    case PARLEY_E_CORRUPT:  // not a Parley store
      if (args.store_path) return "cannot open the store " + *args.store_path;
      break;
    case PARLEY_E_NOT_FOUND:
    case PARLEY_E_IO:
    case PARLEY_E_BAD_MODEL:
    case PARLEY_E_UNSUPPORTED:
      return "cannot open the model";
    default:
      break;
  }
  return "cannot open the engine";
}

// The --logit-bias flags against the model's vocabulary, which parse_args could not know. False
// after saying what is wrong.
bool logit_bias_fits(parley_engine* engine, const chat::CliArgs& args) {
  if (args.logit_bias.empty()) return true;
  parley_model_info info;
  info.struct_size = sizeof info;
  const parley_status st = parley_engine_get_model_info(engine, &info);
  if (st != PARLEY_OK) {
    chat::print_error("cannot read the model's vocabulary size", st);
    return false;
  }
  const auto problem = chat::logit_bias_problem(args, info.n_vocab);
  if (problem) std::fprintf(stderr, "parley-chat: error: %s\n", problem->c_str());
  return !problem;
}

// The --stop and --reply-prefix texts: UTF-8, as the library takes text (its tokenizer says),
// refused now rather than at every message. False after saying which is not.
bool texts_are_utf8(parley_engine* engine, const chat::CliArgs& args) {
  const auto valid = [&](const std::string& text) {
    size_t n = 0;
    return parley_tokenize(engine, text.c_str(), 0, nullptr, 0, &n) != PARLEY_E_INVALID_ARGUMENT;
  };
  for (const auto& s : args.stop_strings) {
    if (!valid(s)) {
      std::fprintf(stderr, "parley-chat: error: a --stop text is not valid UTF-8\n");
      return false;
    }
  }
  if (args.reply_prefix && !valid(*args.reply_prefix)) {
    std::fprintf(stderr, "parley-chat: error: the --reply-prefix text is not valid UTF-8\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // A reader of stdout that went away (`| head`) makes writes fail with EPIPE instead of killing
  // the run: the reply stops and is kept, the store gets it, and the failure is said.
  std::signal(SIGPIPE, SIG_IGN);
  // So does a file-size limit (ulimit -f) reached by the store or an output file: the write
  // fails with EFBIG and is said, instead of SIGXFSZ ending the run mid-reply.
  std::signal(SIGXFSZ, SIG_IGN);
  chat::CliArgs args;
  try {
    args = chat::parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parley-chat: error: %s\n", e.what());
    return 1;
  }
  // Text that could not be written (a full disk) fails the run, as a reply does.
  if (args.help) {
    std::printf("%s", chat::usage());
    return chat::finish_stdout("the help") ? 0 : 1;
  }
  if (args.version) {
    std::printf("parley %s\n", parley_version());
    return chat::finish_stdout("the version") ? 0 : 1;
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
  eo.on_load_progress = chat::show_load_progress;
  parley_engine* engine = nullptr;
  const parley_status st = parley_engine_open(&eo, &engine);
  chat::end_load_meter();
  if (st != PARLEY_OK) {
    chat::print_error(open_failure(args, st).c_str(), st);
    return 1;
  }
  if (!logit_bias_fits(engine, args) || !texts_are_utf8(engine, args)) {
    parley_engine_close(engine);
    return 1;  // as for any flag the command line refuses
  }
  const int rc = args.prompt ? chat::run_one_shot(engine, args) : chat::run_console(engine, args);
  parley_engine_close(engine);
  return rc;
}
