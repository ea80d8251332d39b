#include "new_session.h"

#include "sessions.h"

namespace chat {

parley_status create_session(parley_engine* engine, const CliArgs& args,
                             const std::string& system_prompt, const char* id,
                             parley_session** out) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.id = id;
  if (!system_prompt.empty()) so.system_prompt = system_prompt.c_str();
  if (args.chat_template) so.chat_template = args.chat_template->c_str();
  so.overflow = args.overflow;
  return parley_session_create(engine, &so, out);
}

parley_status open_stored_session(parley_engine* engine, const CliArgs& args, const char* id,
                                  parley_session** out) {
  parley_status st = parley_session_open(engine, id, out);
  if (st != PARLEY_OK || !args.overflow_given) return st;
  st = parley_session_set_overflow(*out, args.overflow);
  if (st != PARLEY_OK) {
    parley_session_close(*out);
    *out = nullptr;
  }
  return st;
}

parley_status create_session_like(parley_engine* engine, parley_session* like,
                                  const std::string& system_prompt, parley_session** out) {
  parley_status st = PARLEY_OK;
  const auto info = info_of(like, &st);
  if (!info) return st;
  parley_session_options so;
  parley_session_options_init(&so);
  if (!system_prompt.empty()) so.system_prompt = system_prompt.c_str();
  so.chat_template = info->chat_template;
  so.overflow = info->overflow;
  return parley_session_create(engine, &so, out);
}

parley_status start_first_session(parley_engine* engine, const CliArgs& args,
                                  parley_session** out, bool* reopened) {
  *reopened = false;
  const char* id = args.session_id ? args.session_id->c_str() : nullptr;
  if (id && args.store_path) {
    const parley_status st = open_stored_session(engine, args, id, out);
    // NOT_FOUND: nothing stored under that id yet, so the conversation starts here.
    if (st != PARLEY_E_NOT_FOUND) {
      *reopened = st == PARLEY_OK;
      return st;
    }
  }
  return create_session(engine, args, args.system_prompt.value_or(""), id, out);
}

}  // namespace chat
