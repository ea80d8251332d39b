#include "store_commands.h"

#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "id_quoting.h"
#include "new_session.h"
#include "output.h"

namespace chat {
namespace {

// "2026-12-03 07:55:10 UTC"
std::string utc_time(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  char buf[32];
  if (!gmtime_r(&t, &tm) || !std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm)) {
    return "?";
  }
  return buf;
}

void print_current(Sessions& sessions) {
  std::printf("(session %s)\n", shown_id(sessions.current().id).c_str());
}

// The store's ids, oldest first; nullopt after printing the error.
std::optional<std::vector<std::string>> stored_ids(parley_engine* engine) {
  std::string buf;
  size_t needed = 0;
  parley_status st;
  // Another process may add sessions between the two calls: ask again until it all fits.
  do {
    buf.resize(needed);
    st = parley_store_list_sessions(engine, buf.data(), buf.size(), &needed);
  } while (st == PARLEY_OK && needed > buf.size());
  if (st != PARLEY_OK) {
    print_error("cannot list the stored sessions", st);
    return std::nullopt;
  }
  buf.resize(needed > 0 ? needed - 1 : 0);  // drop the NUL
  std::vector<std::string> ids;
  size_t start = 0;
  while (start < buf.size()) {
    size_t end = buf.find('\n', start);
    if (end == std::string::npos) end = buf.size();
    ids.push_back(buf.substr(start, end - start));
    start = end + 1;
  }
  return ids;
}

// Without --store the library's refusal would name its own option, not the console's flag.
// False after saying so.
bool has_store(const CliArgs& args, const char* what) {
  if (args.store_path) return true;
  std::fflush(stdout);  // the error lands after what preceded it
  std::fprintf(stderr,
               "parley-chat: error: %s: there is no session store (start parley-chat with "
               "--store FILE)\n",
               what);
  return false;
}

}  // namespace

void announce_reopened(Sessions& sessions) {
  parley_status st = PARLEY_OK;
  const auto info = info_of(sessions.current().session.get(), &st);
  if (!info) {
    print_error("cannot read the session", st);
    return;
  }
  std::printf("(session %s: %u turns from the store)\n", shown_id(info->id).c_str(),
              info->n_turns);
}

void StoreCommands::open(std::string_view id) {
  if (id.empty()) {
    std::printf("usage: /open ID (see /sessions)\n");
    return;
  }
  if (sessions.switch_to(id)) {
    std::printf("(already open)\n");
    print_current(sessions);
    return;
  }
  if (!has_store(args, "cannot open the session")) return;
  const std::string wanted(id);
  parley_session* s = nullptr;
  parley_status st = open_stored_session(engine, args, wanted.c_str(), &s);
  if (st != PARLEY_OK) {
    print_error("cannot open the session", st);
    return;
  }
  st = sessions.add(s, false);
  if (st != PARLEY_OK) {
    print_error("cannot read the opened session's id", st);
    return;
  }
  announce_reopened(sessions);
}

void StoreCommands::suspend() {
  if (!has_store(args, "cannot suspend")) return;
  parley_session* s = sessions.current().session.get();
  const auto before = info_of(s);
  const bool had_kv = before && before->kv_bytes_resident > 0;
  const parley_status st = parley_session_suspend(s);
  if (st != PARLEY_OK) {
    print_error("cannot suspend", st);
    return;
  }
  std::printf(had_kv ? "(suspended; KV in the store)\n"
                     : "(nothing to suspend: the conversation has no KV in memory)\n");
}

void StoreCommands::remove(std::string_view id) {
  if (id.empty()) {
    std::printf("usage: /delete ID (see /sessions)\n");
    return;
  }
  if (!has_store(args, "cannot delete the session")) return;
  // The library refuses too; saying it here names the console's way out.
  if (sessions.is_open(id)) {
    std::printf("cannot delete '%.*s': it is open in this console (/close it first)\n",
                int(id.size()), id.data());
    return;
  }
  const std::string target(id);
  const parley_status st = parley_session_delete(engine, target.c_str());
  if (st != PARLEY_OK) {
    print_error("cannot delete the session", st);
    return;
  }
  std::printf("(deleted %s)\n", shown_id(target).c_str());
}

void StoreCommands::list_not_open() const {
  if (!args.store_path) return;
  const auto ids = stored_ids(engine);
  if (!ids) return;
  std::vector<const std::string*> closed;
  for (const auto& id : *ids) {
    if (!sessions.is_open(id)) closed.push_back(&id);
  }
  if (closed.empty()) {
    std::printf("stored, not open: none\n");
    return;
  }
  std::printf("stored, not open:\n");
  for (const auto* id : closed) {
    parley_stored_session_info info;
    info.struct_size = sizeof info;
    // Another process may have deleted it since the listing: then the id alone.
    if (parley_store_get_session_info(engine, id->c_str(), &info) != PARLEY_OK) {
      std::printf("  - %s\n", shown_id(*id).c_str());
      continue;
    }
    std::printf("  - %s  %u turns, updated %s, %llu KV bytes stored%s\n", shown_id(*id).c_str(),
                info.n_turns, utc_time(info.updated_unix_ms).c_str(),
                static_cast<unsigned long long>(info.kv_bytes_stored),
                info.same_model ? "" : " (another model's or KV type's)");
  }
}

}  // namespace chat
