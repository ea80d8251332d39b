#include "transfer_commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "export_target.h"
#include "file_replace.h"
#include "id_quoting.h"
#include "output.h"

namespace chat {
namespace {

// Like print_error, for a file the console itself reads or writes.
void print_file_error(const char* what, const std::string& path, const char* reason) {
  std::fflush(stdout);
  std::fprintf(stderr, "parley-chat: error: cannot %s %s: %s\n", what, path.c_str(), reason);
}

void print_file_error(const char* what, const std::string& path, int err) {
  print_file_error(what, path, std::strerror(err));
}

// The conversation as JSON; nullopt after printing the error.
std::optional<std::string> exported_json(parley_session* s) {
  std::string json;
  const parley_status st = export_json(s, &json);
  if (st != PARLEY_OK) {
    print_error("cannot export the session", st);
    return std::nullopt;
  }
  return json;
}

// False after printing the error. A failed export leaves PATH as it was (see replace_file).
bool write_file(const std::string& path, const std::string& text) {
  const auto failure = replace_file(path, text);
  if (!failure) return true;
  print_file_error("write", path, failure->c_str());
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

// What /import's argument names: FILE, and ID ("" when not given).
struct ImportArg {
  std::string file;
  std::string id;
};

std::string trimmed_end(std::string_view s) {
  const auto last = s.find_last_not_of(" \t");
  return last == std::string_view::npos ? "" : std::string(s.substr(0, last + 1));
}

// FILE may hold blanks (as /export's may): the whole argument when it names a file, else what
// comes before the id, which is a quoted id that ends the argument or else its last word.
// nullopt (said) when that id cannot be read.
std::optional<ImportArg> split_import_arg(std::string_view arg) {
  std::error_code ec;
  if (std::filesystem::exists(std::string(arg), ec)) return ImportArg{std::string(arg), ""};
  const auto quoted = trailing_quoted_id(arg);
  if (quoted != std::string_view::npos) {
    return ImportArg{trimmed_end(arg.substr(0, quoted)), *read_id(arg.substr(quoted))};
  }
  const auto blank = arg.find_last_of(" \t");
  if (blank == std::string_view::npos) return ImportArg{std::string(arg), ""};
  const auto id = read_id(arg.substr(blank + 1));
  if (!id) {
    print_unreadable_id(arg.substr(blank + 1));
    return std::nullopt;
  }
  return ImportArg{trimmed_end(arg.substr(0, blank)), *id};
}

// " N messages" (" 1 message"; the system prompt is one), or "" when the session cannot say.
std::string message_count(parley_session* s) {
  const auto info = info_of(s);
  if (!info) return "";
  return " " + std::to_string(info->n_turns) + (info->n_turns == 1 ? " message" : " messages");
}

}  // namespace

void TransferCommands::export_to(std::string_view path) {
  if (path.empty()) {
    std::printf("usage: /export FILE\n");
    return;
  }
  const std::string file(path);
  if (const auto why = export_refusal(file, args)) {
    print_file_error("write", file, why->c_str());
    return;
  }
  Sessions::Open& open = sessions.current();
  const auto json = exported_json(open.session.get());
  if (!json) return;
  if (!write_file(file, *json)) return;
  std::printf("(exported %s:%s to %s)\n", shown_id(open.id).c_str(),
              message_count(open.session.get()).c_str(), file.c_str());
}

void TransferCommands::import_from(std::string_view arg) {
  const auto split = split_import_arg(arg);
  if (!split) return;
  const auto& [file, id] = *split;
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
  st = sessions.add(s, true);
  if (st != PARLEY_OK) {
    print_error("cannot read the imported session's id", st);
    return;
  }
  const std::string new_id = shown_id(sessions.current().id);
  std::printf("(imported %s:%s from %s)\n(session %s)\n", new_id.c_str(), count.c_str(),
              file.c_str(), new_id.c_str());
}

}  // namespace chat
