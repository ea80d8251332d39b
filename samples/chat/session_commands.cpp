#include "session_commands.h"

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>

#include "id_quoting.h"
#include "new_session.h"
#include "output.h"
#include "state_names.h"

namespace chat {
namespace {

// An empty argument means "let the library generate an id".
std::optional<std::string> optional_id(std::string_view id) {
  if (id.empty()) return std::nullopt;
  return std::string(id);
}

// A positive count of messages, or nullopt.
std::optional<uint32_t> parse_count(std::string_view s) {
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n == 0) return std::nullopt;
  return n;
}

// The system prompt the session was started with ("" when none): turn 0 when it is one.
std::string system_prompt_of(parley_session* s) {
  parley_turn turn;
  turn.struct_size = sizeof turn;
  if (parley_session_get_turn(s, 0, &turn) != PARLEY_OK || turn.role != PARLEY_ROLE_SYSTEM) {
    return "";
  }
  return turn.text;
}

// The conversation's number of turns; nullopt (said on stderr) when it cannot be read.
std::optional<uint32_t> turn_count(parley_session* s) {
  parley_status st = PARLEY_OK;
  const auto info = info_of(s, &st);
  if (!info) {
    print_error("cannot read the session", st);
    return std::nullopt;
  }
  return info->n_turns;
}

void print_current(Sessions& sessions) {
  std::printf("(session %s)\n", shown_id(sessions.current().id).c_str());
}

// Hands a session created in this run to the registry and announces it.
void adopt_as_current(Sessions& sessions, parley_session* s, bool started_here) {
  const parley_status st = sessions.add(s, started_here);
  if (st != PARLEY_OK) {
    print_error("cannot read the new session's id", st);
    return;
  }
  print_current(sessions);
}

}  // namespace

void SessionCommands::start_new(std::string_view id) {
  const auto wanted = optional_id(id);
  parley_session* s = nullptr;
  const parley_status st = create_session(engine, args, args.system_prompt.value_or(""),
                                          wanted ? wanted->c_str() : nullptr, &s);
  if (st != PARLEY_OK) {
    print_error("cannot start a session", st);
    return;
  }
  adopt_as_current(sessions, s, true);
}

void SessionCommands::switch_to(std::string_view id) {
  if (id.empty()) {
    std::printf("usage: /switch ID (see /sessions)\n");
    return;
  }
  if (!sessions.switch_to(id)) {
    std::printf("no open session '%.*s' (see /sessions)\n", int(id.size()), id.data());
    return;
  }
  print_current(sessions);
}

void SessionCommands::fork(std::string_view id) {
  const auto wanted = optional_id(id);
  parley_session* copy = nullptr;
  const parley_status st = parley_session_fork(sessions.current().session.get(),
                                               wanted ? wanted->c_str() : nullptr, &copy);
  if (st != PARLEY_OK) {
    print_error("cannot fork the session", st);
    return;
  }
  adopt_as_current(sessions, copy, true);
}

void SessionCommands::rewind(std::string_view count) {
  const auto n = parse_count(count);
  if (!n) {
    std::printf("usage: /rewind N (N: how many messages to drop, at least 1)\n");
    return;
  }
  parley_session* s = sessions.current().session.get();
  const parley_status st = parley_session_rewind(s, *n);
  if (st != PARLEY_OK) {
    print_error("cannot rewind", st);
    return;
  }
  if (const auto turns = turn_count(s)) std::printf("(rewound %u; %u turns left)\n", *n, *turns);
}

void SessionCommands::set_system_prompt(std::string_view text) {
  parley_session* s = sessions.current().session.get();
  const parley_status st = parley_session_set_system_prompt(s, std::string(text).c_str());
  if (st != PARLEY_OK) {
    print_error("cannot set the system prompt", st);
    return;
  }
  if (const auto turns = turn_count(s)) {
    std::printf("(system prompt %s; %u turns)\n", text.empty() ? "removed" : "set", *turns);
  }
}

void SessionCommands::reset() {
  // The same conversation afresh: its system prompt, template and overflow policy.
  parley_session* current = sessions.current().session.get();
  parley_session* fresh = nullptr;
  parley_status st = create_session_like(engine, current, system_prompt_of(current), &fresh);
  if (st != PARLEY_OK) {
    print_error("cannot start a session", st);
    return;
  }
  st = sessions.replace_current(fresh, true);
  if (st != PARLEY_OK) {
    print_error("cannot read the new session's id", st);
    return;
  }
  std::printf("(new conversation)\n");
  print_current(sessions);
}

void SessionCommands::list() const {
  for (const auto& open : sessions.all()) {
    parley_status st = PARLEY_OK;
    const auto info = info_of(open.session.get(), &st);
    if (!info) {
      print_error("cannot read a session", st);
      continue;
    }
    std::printf("%c %s  %u turns, %u tokens, %s, %llu KV bytes resident, %llu stored\n",
                sessions.is_current(open) ? '*' : ' ', shown_id(open.id).c_str(), info->n_turns,
                info->n_tokens, session_state_name(info->state),
                (unsigned long long)info->kv_bytes_resident,
                (unsigned long long)info->kv_bytes_stored);
  }
}

void SessionCommands::close(std::string_view id) {
  if (id.empty()) {
    std::printf("usage: /close ID (see /sessions)\n");
    return;
  }
  if (!sessions.is_open(id)) {
    std::printf("no open session '%.*s' (see /sessions)\n", int(id.size()), id.data());
    return;
  }
  if (!sessions.close(id)) {
    std::printf("'%.*s' is the only open session; /new or /open another first, or /quit\n",
                int(id.size()), id.data());
    return;
  }
  std::printf("(closed %s)\n", shown_id(id).c_str());
  print_current(sessions);
}

}  // namespace chat
