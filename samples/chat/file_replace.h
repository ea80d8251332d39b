// Writing a file the user named without ever costing what was there: the text goes to a
// temporary file beside it, which takes its place only once completely written.
#pragma once

#include <optional>
#include <string>

namespace chat {

// Makes `path` a regular file holding `text`, the whole text or nothing, so a failed write (a
// full disk) never costs the file an earlier one wrote. A new file gets the mode fopen would
// give it, a replaced one keeps its own; through a symbolic link the file it names is replaced
// and the link stays. A path that exists and is not a regular file (a directory, a device) is
// refused. nullopt on success, else why not (naming the temporary file when it is that file
// which could not be made, as beside a file in a read-only folder); then nothing changed.
std::optional<std::string> replace_file(const std::string& path, const std::string& text);

}  // namespace chat
