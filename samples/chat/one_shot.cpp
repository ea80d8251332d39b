#include "one_shot.h"

#include <cstdio>
#include <optional>
#include <string>

#include "new_session.h"
#include "output.h"
#include "sessions.h"
#include "unstored_turns.h"

namespace chat {
namespace {

// stdout holds only the reply, so the id of a conversation the library named goes to stderr:
// without it the stored conversation could not be continued.
void announce_stored_id(const std::string& id) {
  std::fprintf(stderr, "parley-chat: stored as session %s (continue with --session %s)\n",
               id.c_str(), id.c_str());
}

// Closes the run's conversation. With a store, closing spills the KV, so the next run restores
// it; one this run started is named once it holds the turn (`stored`), and is not left behind
// when nothing was said in it.
void close_session(parley_engine* engine, const CliArgs& args, parley_session* session,
                   bool reopened, bool stored) {
  if (!args.store_path || reopened) {
    parley_session_close(session);
    return;
  }
  parley_status st = PARLEY_OK;
  const auto id = session_id(session, &st);
  if (!id) {
    print_error("cannot read the session's id", st);
    parley_session_close(session);
    return;
  }
  if (close_dropping_unspoken(engine, session, *id)) {
    std::fprintf(stderr, "parley-chat: session %s was not kept: nothing was said in it\n",
                 id->c_str());
  } else if (!args.session_id && stored) {
    announce_stored_id(*id);
  }
}

}  // namespace

int run_one_shot(parley_engine* engine, const CliArgs& args) {
  parley_session* session = nullptr;
  bool reopened = false;
  parley_status st = start_first_session(engine, args, &session, &reopened);
  if (st != PARLEY_OK) {
    print_error("cannot start a session", st);
    return 1;
  }
  stop_replies_on_signals();
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  bool wrote = false;
  {
    const InterruptOnCtrlC stop(session);
    const GenerateOptions gen(args);
    st = parley_session_send(session, args.prompt->c_str(), gen.get(), stream_and_note, &wrote,
                             &stats);
  }
  // A reply ends its line; a send refused before any reply leaves stdout empty.
  if (st == PARLEY_OK || st == PARLEY_E_CANCELLED || wrote) std::printf("\n");
  int rc = 0;
  if (st == PARLEY_OK || st == PARLEY_E_CANCELLED) {
    if (args.print_ids) print_ids(last_reply_ids(session));
    // A reply that could not be written stops too; finish_stdout() says why.
    if (st == PARLEY_E_CANCELLED && flush_stdout()) {
      std::fprintf(stderr, "parley-chat: stopped\n");
      rc = 1;
    }
  } else {
    print_error("generation failed", st);
    rc = 1;
  }
  if (!finish_stdout()) rc = 1;
  // A turn the store refused (unstored_turns.h) goes to a file beside it, and fails the run.
  std::optional<std::string> unsaved;
  if (args.store_path && !nothing_said(session)) {
    unsaved = save_unstored_turns(session, *args.store_path);
  }
  close_session(engine, args, session, reopened, !unsaved);
  if (unsaved) {
    std::fputs(unsaved->c_str(), stderr);
    rc = 1;
  }
  // The reply a SIGTERM or SIGHUP stopped is kept, as one Ctrl-C stopped; the status says why.
  return terminating_signal() != 0 ? 128 + terminating_signal() : rc;
}

}  // namespace chat
