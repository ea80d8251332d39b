#include "transfer_commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "output.h"

namespace chat {
namespace {

struct Target {
  std::string path;            // the file to replace: `path`, or the file its link names
  std::optional<mode_t> mode;  // the permissions of the file there; nullopt: none is there
};

// What replace_file will replace; nullopt with *why set when it must not.
std::optional<Target> target_of(const std::string& path, std::string* why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      *why = std::strerror(errno);
      return std::nullopt;
    }
    return Target{path, std::nullopt};  // a missing directory shows when writing
  }
  // Renaming over a device or a directory would replace what is no file of ours.
  if (!S_ISREG(st.st_mode)) {
    *why = S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file";
    return std::nullopt;
  }
  // Through a symbolic link: the file it names is replaced, and the link stays.
  const std::unique_ptr<char, void (*)(void*)> real(::realpath(path.c_str(), nullptr), std::free);
  return Target{real ? std::string(real.get()) : path, st.st_mode & 07777};
}

// The errno of a call that just failed; EIO when it left none.
int last_error() { return errno != 0 ? errno : EIO; }

// A new file beside `path`, named in *name, with the permissions fopen would give it (0666
// less the umask); -1 with errno set when it cannot be made.
int create_beside(const std::string& path, std::string* name) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    *name = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
    const int fd = ::open(name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;  // EEXIST: a leftover of a crashed run
  }
  return -1;
}

// Writes `text` to a new file beside target.path, named in *temp (empty when none was made);
// 0 or the errno of what failed.
int write_beside(const Target& target, const std::string& text, std::string* temp) {
  std::string name;
  const int fd = create_beside(target.path, &name);
  if (fd < 0) return last_error();
  *temp = name;
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int err = last_error();
    ::close(fd);
    return err;
  }
  int err = 0;
  // A replaced file keeps its permissions.
  if (target.mode && ::fchmod(fd, *target.mode) != 0) err = last_error();
  if (err == 0 && std::fwrite(text.data(), 1, text.size(), f) != text.size()) err = last_error();
  if (err == 0 && std::fflush(f) != 0) err = last_error();
  // On disk before it takes the old file's place, so a crash leaves one or the other.
  if (err == 0 && ::fsync(fd) != 0) err = last_error();
  if (std::fclose(f) != 0 && err == 0) err = last_error();
  return err;
}

// Makes `path` a regular file holding `text`, the whole text or nothing: it goes to a
// temporary file beside PATH, which takes its place only once completely written, so a failed
// export (a full disk) never costs the file an earlier one wrote. A new file gets the mode
// fopen would give it, a replaced one keeps its own; through a symbolic link the file it
// names is replaced and the link stays. A path that exists and is not a regular file (a
// directory, a device) is refused. nullopt on success, else why not; then nothing changed.
std::optional<std::string> replace_file(const std::string& path, const std::string& text) {
  std::string why;
  const auto target = target_of(path, &why);
  if (!target) return why;
  std::string temp;
  int err = write_beside(*target, text, &temp);
  if (err == 0 && std::rename(temp.c_str(), target->path.c_str()) != 0) err = last_error();
  if (err == 0) return std::nullopt;
  if (!temp.empty()) std::remove(temp.c_str());  // ours alone: the target was never touched
  return std::string(std::strerror(err));
}

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
  // FILE may hold blanks (as /export's may): the whole argument when it names a file, else
  // what comes before the last blank, the rest being the id.
  std::string file(arg);
  std::string id;
  const auto blank = arg.find_last_of(" \t");
  std::error_code ec;
  if (blank != std::string_view::npos && !std::filesystem::exists(file, ec)) {
    const auto path_end = arg.find_last_not_of(" \t", blank);
    file = path_end == std::string_view::npos ? "" : std::string(arg.substr(0, path_end + 1));
    id = arg.substr(blank + 1);
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
  st = sessions.add(s, true);
  if (st != PARLEY_OK) {
    print_error("cannot read the imported session's id", st);
    return;
  }
  const std::string& new_id = sessions.current().id;
  std::printf("(imported %s:%s from %s)\n(session %s)\n", new_id.c_str(), count.c_str(),
              file.c_str(), new_id.c_str());
}

}  // namespace chat
