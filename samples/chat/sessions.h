// The console's open conversations, by id, in the order they were opened, and which one is
// current. Every session handed to it is closed by it.
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
  };

  // Takes `s` and makes it current. Fails only when its id cannot be read; `s` is then closed.
  parley_status add(parley_session* s);

  // Closes the current session and puts `s` in its place, as the current one. Same failure
  // rule as add(); the current session then stays.
  parley_status replace_current(parley_session* s);

  // False when no open session has that id; nothing changes then.
  bool switch_to(std::string_view id);

  bool is_open(std::string_view id) const;

  // Closes the session `id` (with a store that spills its KV there). The current one stays
  // current unless it is the one closed; then the one after it (or the last) takes over.
  // False, changing nothing, when `id` is not open or is the only open session.
  bool close(std::string_view id);

  Open& current() { return open_[current_]; }
  bool is_current(const Open& o) const { return &o == &open_[current_]; }
  const std::vector<Open>& all() const { return open_; }

 private:
  std::optional<size_t> index_of(std::string_view id) const;

  std::vector<Open> open_;
  size_t current_ = 0;
};

// The session's id, or nullopt (parley_last_error() says why).
std::optional<std::string> session_id(parley_session* s, parley_status* status);

}  // namespace chat
