#include "transfer_commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "output.h"

namespace chat {
namespace {

// Like print_error, for a file the console itself reads or writes.
void print_file_error(const char* what, const std::string& path, int err) {
  std::fflush(stdout);
  std::fprintf(stderr, "parley-chat: error: cannot %s %s: %s\n", what, path.c_str(),
               std::strerror(err));
}

// The conversation as JSON; nullopt after printing the error.
std::optional<std::string> exported_json(parley_session* s) {
  size_t needed = 0;
  parley_status st = parley_session_export(s, nullptr, 0, &needed);
  std::string json(needed, '\0');
  if (st == PARLEY_OK) st = parley_session_export(s, json.data(), json.size(), &needed);
  if (st != PARLEY_OK) {
    print_error("cannot export the session", st);
    return std::nullopt;
  }
  json.resize(needed > 0 ? needed - 1 : 0);  // drop the NUL
  return json;
}

// False after printing the error. A file left half written is removed: it would not import.
bool write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    print_file_error("write", path, errno);
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (written && closed) return true;
  if (written) err = errno;
  std::remove(path.c_str());
  print_file_error("write", path, err);
  return false;
}

// The file's bytes; nullopt after printing the error.
std::optional<std::string> read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    print_file_error("read", path, errno);
    return std::nullopt;
  }
  std::string text;
  char chunk[65536];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) text.append(chunk, n);
  const bool failed = std::ferror(f) != 0;  // e.g. a directory: EISDIR
  const int err = errno;
  std::fclose(f);
  if (failed) {
    print_file_error("read", path, err);
    return std::nullopt;
  }
  return text;
}

// " N messages" (the system prompt is one), or "" when the session cannot say.
std::string message_count(parley_session* s) {
  parley_session_info info;
  info.struct_size = sizeof info;
  if (parley_session_get_info(s, &info) != PARLEY_OK) return "";
  return " " + std::to_string(info.n_turns) + " messages";
}

}  // namespace

void TransferCommands::export_to(std::string_view path) {
  if (path.empty()) {
    std::printf("usage: /export FILE\n");
    return;
  }
  Sessions::Open& open = sessions.current();
  const auto json = exported_json(open.session.get());
  if (!json) return;
  const std::string file(path);
  if (!write_file(file, *json)) return;
  std::printf("(exported %s:%s to %s)\n", open.id.c_str(),
              message_count(open.session.get()).c_str(), file.c_str());
}

void TransferCommands::import_from(std::string_view arg) {
  const auto blank = arg.find_first_of(" \t");
  const std::string file(arg.substr(0, blank));
  std::string id;
  if (blank != std::string_view::npos) {
    const auto id_start = arg.find_first_not_of(" \t", blank);
    if (id_start != std::string_view::npos) id = arg.substr(id_start);
  }
  if (file.empty()) {
    std::printf("usage: /import FILE [ID]\n");
    return;
  }
  const auto json = read_file(file);
  if (!json) return;
  parley_session* s = nullptr;
  parley_status st = parley_session_import(engine, json->c_str(),
                                           id.empty() ? nullptr : id.c_str(), &s);
  if (st != PARLEY_OK) {
    print_error("cannot import the conversation", st);
    return;
  }
  const std::string count = message_count(s);
  st = sessions.add(s);
  if (st != PARLEY_OK) {
    print_error("cannot read the imported session's id", st);
    return;
  }
  const std::string& new_id = sessions.current().id;
  std::printf("(imported %s:%s from %s)\n(session %s)\n", new_id.c_str(), count.c_str(),
              file.c_str(), new_id.c_str());
}

}  // namespace chat
