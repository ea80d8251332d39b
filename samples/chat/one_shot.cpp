#include "one_shot.h"

#include <cstdio>

#include "new_session.h"
#include "output.h"

namespace chat {

int run_one_shot(parley_engine* engine, const CliArgs& args) {
  parley_session* session = nullptr;
  parley_status st =
      create_session(engine, args, args.system_prompt.value_or(""), nullptr, &session);
  if (st != PARLEY_OK) {
    print_error("cannot start a session", st);
    return 1;
  }
  stop_replies_on_ctrl_c();
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  st = parley_session_send(session, args.prompt->c_str(), &args.gen, stream_to_stdout, nullptr,
                           &stats);
  std::printf("\n");
  int rc = 0;
  if (st == PARLEY_OK || st == PARLEY_E_CANCELLED) {
    if (args.print_ids) print_ids(last_reply_ids(session, stats.generated_tokens));
    if (st == PARLEY_E_CANCELLED) {
      std::fprintf(stderr, "parley-chat: stopped\n");
      rc = 1;
    }
  } else {
    print_error("generation failed", st);
    rc = 1;
  }
  parley_session_close(session);
  return rc;
}

}  // namespace chat
