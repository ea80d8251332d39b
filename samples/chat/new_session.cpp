#include "new_session.h"

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

parley_status start_first_session(parley_engine* engine, const CliArgs& args,
                                  parley_session** out, bool* reopened) {
  *reopened = false;
  const char* id = args.session_id ? args.session_id->c_str() : nullptr;
  if (id && args.store_path) {
    const parley_status st = parley_session_open(engine, id, out);
    // NOT_FOUND: nothing stored under that id yet, so the conversation starts here.
    if (st != PARLEY_E_NOT_FOUND) {
      *reopened = st == PARLEY_OK;
      return st;
    }
  }
  return create_session(engine, args, args.system_prompt.value_or(""), id, out);
}

}  // namespace chat
