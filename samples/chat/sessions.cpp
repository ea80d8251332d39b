#include "sessions.h"

namespace chat {
namespace {

// Owns `s` from here on: on failure the returned nothing closes it.
std::optional<Sessions::Open> adopt(parley_session* s, parley_status* status) {
  Sessions::Open entry{{}, {s, parley_session_close}, std::nullopt};
  auto id = session_id(s, status);
  if (!id) return std::nullopt;
  entry.id = std::move(*id);
  return entry;
}

}  // namespace

std::optional<std::string> session_id(parley_session* s, parley_status* status) {
  parley_session_info info;
  info.struct_size = sizeof info;
  *status = parley_session_get_info(s, &info);
  if (*status != PARLEY_OK) return std::nullopt;
  return std::string(info.id);
}

parley_status Sessions::add(parley_session* s) {
  parley_status st = PARLEY_OK;
  auto entry = adopt(s, &st);
  if (!entry) return st;
  open_.push_back(std::move(*entry));
  current_ = open_.size() - 1;
  return PARLEY_OK;
}

parley_status Sessions::replace_current(parley_session* s) {
  parley_status st = PARLEY_OK;
  auto entry = adopt(s, &st);
  if (!entry) return st;
  open_[current_] = std::move(*entry);  // closes the replaced session
  return PARLEY_OK;
}

bool Sessions::switch_to(std::string_view id) {
  for (size_t i = 0; i < open_.size(); ++i) {
    if (open_[i].id == id) {
      current_ = i;
      return true;
    }
  }
  return false;
}

}  // namespace chat
