#include "sessions.h"

#include <cstddef>

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

std::optional<size_t> Sessions::index_of(std::string_view id) const {
  for (size_t i = 0; i < open_.size(); ++i) {
    if (open_[i].id == id) return i;
  }
  return std::nullopt;
}

bool Sessions::switch_to(std::string_view id) {
  const auto i = index_of(id);
  if (!i) return false;
  current_ = *i;
  return true;
}

bool Sessions::is_open(std::string_view id) const { return index_of(id).has_value(); }

bool Sessions::close(std::string_view id) {
  const auto i = index_of(id);
  if (!i || open_.size() == 1) return false;
  open_.erase(open_.begin() + std::ptrdiff_t(*i));  // closes the session
  if (*i < current_ || current_ == open_.size()) --current_;
  return true;
}

}  // namespace chat
