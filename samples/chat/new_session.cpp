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
  return parley_session_create(engine, &so, out);
}

}  // namespace chat
