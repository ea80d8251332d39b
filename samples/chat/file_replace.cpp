#include "file_replace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

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

// Writes `text` to `fd`, a new file beside target.path; 0 or the errno of what failed. Closes
// `fd`.
int write_new_file(int fd, const Target& target, const std::string& text) {
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

// Whether `err`, from making a new file, is its folder's (missing, not writable), and so as
// true of the target's name as of the temporary one's.
bool is_the_folders(int err) {
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == EPERM || err == EROFS;
}

// Why the temporary file `temp` beside the target could not be made (`err`). The temporary
// file is named unless the error is as true of the target: an existing target is readable
// where no new file can go (a read-only folder, /proc).
std::string creation_failure(const Target& target, const std::string& temp, int err) {
  const std::string reason = std::strerror(err);
  if (!target.mode && is_the_folders(err)) return reason;
  return "cannot create the temporary file " + temp + ": " + reason;
}

}  // namespace

std::optional<std::string> replace_file(const std::string& path, const std::string& text) {
  std::string why;
  const auto target = target_of(path, &why);
  if (!target) return why;
  std::string temp;
  const int fd = create_beside(target->path, &temp);
  if (fd < 0) return creation_failure(*target, temp, last_error());
  int err = write_new_file(fd, *target, text);
  if (err == 0 && std::rename(temp.c_str(), target->path.c_str()) != 0) err = last_error();
  if (err == 0) return std::nullopt;
  std::remove(temp.c_str());  // ours alone: the target was never touched
  return std::string(std::strerror(err));
}

}  // namespace chat
