#include "bar_parts.h"

namespace chat {
namespace {

std::string_view trim_blanks(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

std::vector<std::string> split_bars(std::string_view arg) {
  std::vector<std::string> parts;
  for (;;) {
    const auto bar = arg.find('|');
    parts.emplace_back(trim_blanks(arg.substr(0, bar)));
    if (bar == std::string_view::npos) return parts;
    arg.remove_prefix(bar + 1);
  }
}

}  // namespace chat
