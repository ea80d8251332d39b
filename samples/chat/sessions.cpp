#include "sessions.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "unstored_turns.h"

namespace chat {
namespace {

// Owns `s` from here on: on failure the returned nothing closes it.
std::optional<Sessions::Open> adopt(parley_session* s, bool started_here,
                                    parley_status* status) {
  Sessions::Open entry{{}, {s, parley_session_close}, std::nullopt, started_here};
  auto id = session_id(s, status);
  if (!id) return std::nullopt;
  entry.id = std::move(*id);
  return entry;
}

// The messages the store holds of conversation `id`, its system prompt included; nullopt when
// that cannot be read.
std::optional<uint32_t> stored_turn_count(parley_engine* engine, const std::string& id) {
  parley_stored_session_info info;
  info.struct_size = sizeof info;
  if (parley_store_get_session_info(engine, id.c_str(), &info) != PARLEY_OK) return std::nullopt;
  return info.n_turns;
}

}  // namespace

std::optional<parley_session_info> info_of(parley_session* s, parley_status* status) {
  parley_session_info info;
  info.struct_size = sizeof info;
  const parley_status st = parley_session_get_info(s, &info);
  if (status) *status = st;
  if (st != PARLEY_OK) return std::nullopt;
  return info;
}

std::optional<std::string> session_id(parley_session* s, parley_status* status) {
  const auto info = info_of(s, status);
  if (!info) return std::nullopt;
  return std::string(info->id);
}

parley_status export_json(parley_session* s, std::string* json) {
  size_t needed = 0;
  parley_status st = parley_session_export(s, nullptr, 0, &needed);
  json->assign(needed, '\0');
  if (st == PARLEY_OK) st = parley_session_export(s, json->data(), json->size(), &needed);
  json->resize(st == PARLEY_OK && needed > 0 ? needed - 1 : 0);  // drop the NUL
  return st;
}

bool nothing_said(parley_session* s) {
  const auto info = info_of(s);
  if (!info) return false;
  if (info->n_turns == 0) return true;
  parley_turn first;
  first.struct_size = sizeof first;
  return info->n_turns == 1 && parley_session_get_turn(s, 0, &first) == PARLEY_OK &&
         first.role == PARLEY_ROLE_SYSTEM;
}

bool close_dropping_unspoken(parley_engine* engine, parley_session* s, const std::string& id) {
  const auto unspoken = nothing_said(s) ? info_of(s) : std::nullopt;
  parley_session_close(s);  // the library deletes only closed conversations
  if (!unspoken) return false;
  // Another run on the store may have spoken in it meanwhile (the same id in a second console
  // or a one-shot run): only the store can tell, so it is read last, just before the delete.
  const auto stored = stored_turn_count(engine, id);
  const bool stored_unspoken = stored && *stored <= unspoken->n_turns;  // at most this run's
  return stored_unspoken && parley_session_delete(engine, id.c_str()) == PARLEY_OK;
}

void Sessions::close_all() {
  for (Open& o : open_) close_session(o);
  open_.clear();
}

void Sessions::close_session(Open& o) {
  parley_session* s = o.session.release();
  if (!store_engine_) {
    parley_session_close(s);
    return;
  }
  std::optional<std::string> unsaved;
  if (!o.started_here || !nothing_said(s)) unsaved = save_unstored_turns(s, store_path_);
  if (o.started_here) {
    close_dropping_unspoken(store_engine_, s, o.id);
  } else {
    parley_session_close(s);
  }
  // After the library's own warning at the close, so that where the turns are comes last.
  if (unsaved) {
    std::fflush(stdout);
    std::fputs(unsaved->c_str(), stderr);
    all_stored_ = false;
  }
}

parley_status Sessions::add(parley_session* s, bool started_here) {
  parley_status st = PARLEY_OK;
  auto entry = adopt(s, started_here, &st);
  if (!entry) return st;
  open_.push_back(std::move(*entry));
  current_ = open_.size() - 1;
  return PARLEY_OK;
}

parley_status Sessions::replace_current(parley_session* s, bool started_here) {
  parley_status st = PARLEY_OK;
  auto entry = adopt(s, started_here, &st);
  if (!entry) return st;
  close_session(open_[current_]);
  open_[current_] = std::move(*entry);
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
  close_session(open_[*i]);
  open_.erase(open_.begin() + std::ptrdiff_t(*i));
  if (*i < current_ || current_ == open_.size()) --current_;
  return true;
}

}  // namespace chat
