#include "id_quoting.h"

#include <cstdio>

namespace chat {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// Unquoted, such an id would be trimmed, taken for a quoted one or cut at a blank.
bool needs_quotes(std::string_view id) {
  return id.empty() || id.front() == '"' || id.find_first_of(" \t") != std::string_view::npos;
}

}  // namespace

std::optional<std::string> read_id(std::string_view arg) {
  if (!arg.starts_with('"')) return std::string(arg);
  std::string id;
  for (size_t i = 1; i < arg.size(); ++i) {
    char c = arg[i];
    if (c == '"') {
      if (i + 1 != arg.size()) return std::nullopt;
      return id;
    }
    // Any other backslash is itself: ids such as "a\b c" read as they look.
    if (c == '\\' && i + 1 < arg.size() && (arg[i + 1] == '"' || arg[i + 1] == '\\')) {
      c = arg[++i];
    }
    id += c;
  }
  return std::nullopt;
}

std::string shown_id(std::string_view id) {
  if (!needs_quotes(id)) return std::string(id);
  std::string shown = "\"";
  for (const char c : id) {
    if (c == '"' || c == '\\') shown += '\\';
    shown += c;
  }
  return shown + '"';
}

size_t trailing_quoted_id(std::string_view arg) {
  for (size_t i = arg.find('"'); i != std::string_view::npos; i = arg.find('"', i + 1)) {
    if ((i == 0 || is_blank(arg[i - 1])) && read_id(arg.substr(i))) return i;
  }
  return std::string_view::npos;
}

void print_unreadable_id(std::string_view arg) {
  std::printf("cannot read the id %.*s: a quoted id ends at its closing quote, with nothing "
              "after it (inside, \\\" is a quote and \\\\ a backslash)\n",
              int(arg.size()), arg.data());
}

}  // namespace chat
