// The console's open conversations, by id, in the order they were opened, and which one is
// current. Every session handed to it is closed by it; with a store, one started in this run
// that nothing was said in, here or by another run on the store, is deleted from the store as
// it closes, and one whose turns the store refuses is saved to a file beside it instead
// (unstored_turns.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parley.h"

namespace chat {

class Sessions {
 public:
  struct Open {
    std::string id;
    std::unique_ptr<parley_session, void (*)(parley_session*)> session;
    std::optional<parley_turn_stats> last_turn;  // of the last message sent in this session
    bool started_here = false;  // created in this run, not opened from the store
  };

  // `store_path`: the engine's store file, where unspoken conversations started here are
  // deleted; nullopt without one.
  Sessions(parley_engine* engine, const std::optional<std::string>& store_path)
      : store_engine_(store_path ? engine : nullptr), store_path_(store_path.value_or("")) {}
  ~Sessions() { close_all(); }
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;

  // Takes `s` (`started_here`: created in this run) and makes it current. Fails only when its
  // id cannot be read; `s` is then closed.
  parley_status add(parley_session* s, bool started_here);

  // Closes the current session and puts `s` in its place, as the current one. Same failure
  // rule as add(); the current session then stays.
  parley_status replace_current(parley_session* s, bool started_here);

  // False when no open session has that id; nothing changes then.
  bool switch_to(std::string_view id);

  bool is_open(std::string_view id) const;

  // Closes the session `id` (with a store that spills its KV there). The current one stays
  // current unless it is the one closed; then the one after it (or the last) takes over.
  // False, changing nothing, when `id` is not open or is the only open session.
  bool close(std::string_view id);

  // Closes them all; the console's end.
  void close_all();

  // False once a conversation was closed whose turns the store refused (said on stderr).
  bool all_stored() const { return all_stored_; }

  Open& current() { return open_[current_]; }
  bool is_current(const Open& o) const { return &o == &open_[current_]; }
  const std::vector<Open>& all() const { return open_; }

 private:
  std::optional<size_t> index_of(std::string_view id) const;
  // Closes o's session (dropping it from the store when unspoken); o.session is NULL after.
  void close_session(Open& o);

  parley_engine* store_engine_;
  std::string store_path_;
  bool all_stored_ = true;
  std::vector<Open> open_;
  size_t current_ = 0;
};

// What parley_session_get_info says of `s`, or nullopt (`*status`, when given, says why, as
// does parley_last_error()).
std::optional<parley_session_info> info_of(parley_session* s, parley_status* status = nullptr);

// The session's id, or nullopt (parley_last_error() says why).
std::optional<std::string> session_id(parley_session* s, parley_status* status);

// The conversation as parley_session_export's JSON, in *json; on failure parley_last_error()
// says why.
parley_status export_json(parley_session* s, std::string* json);

// A run that starts a conversation and leaves it without a word said in it (a console quit at
// once, a /new never used, a one-shot message refused) leaves nothing in the store, unless
// another run on the store spoke in it meanwhile.

// True when the conversation holds no message but, perhaps, its system prompt. False also
// when that cannot be read: a conversation is never dropped by mistake.
bool nothing_said(parley_session* s);

// Closes `s` (id `id`, started in this run, in a store). When nothing was said in it, it is
// deleted from the store as well, unless the store holds more of it than this run does
// (another run on the store spoke in it) or cannot say; returns whether it was deleted.
bool close_dropping_unspoken(parley_engine* engine, parley_session* s, const std::string& id);

}  // namespace chat
