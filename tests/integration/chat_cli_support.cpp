#include "chat_cli_support.h"

#include <sstream>

namespace parley::test {

#ifdef PARLEY_CHAT_EXE
std::string raw_chat_command(const std::filesystem::path& model, const std::string& flags) {
  return std::string(PARLEY_CHAT_EXE) + " -m " + shell_quote(model.string()) +
         " --template raw --temp 0 -n 8 " + flags;
}

ShellRun run_raw_console(const std::filesystem::path& model, const std::string& input,
                         const std::string& flags) {
  return run_shell("printf '%s' " + shell_quote(input) + " | " + raw_chat_command(model, flags) +
                   " 2>&1");
}
#endif

std::string listed_id(const std::string& line, size_t pos) {
  if (line.compare(pos, 1, "\"") == 0) {
    for (size_t i = pos + 1; i < line.size(); ++i) {
      if (line[i] == '\\') ++i;  // \" and \\ stand for one character
      else if (line[i] == '"') return line.substr(pos, i + 1 - pos);
    }
  }
  const size_t gap = line.find("  ", pos);
  return line.substr(pos, gap == std::string::npos ? std::string::npos : gap - pos);
}

std::optional<std::vector<std::string>> stored_not_open(const std::string& text) {
  const std::string header = "stored, not open:";
  const size_t at = text.rfind(header);
  if (at == std::string::npos) return std::nullopt;
  std::vector<std::string> ids;
  std::istringstream lines(text.substr(at + header.size()));
  std::string line;
  std::getline(lines, line);  // the rest of the header line: "" or " none"
  // "  - ID  N turns, updated ..."
  while (std::getline(lines, line) && line.rfind("  - ", 0) == 0) {
    ids.push_back(listed_id(line, 4));
  }
  return ids;
}

bool have_script() { return run_shell("command -v script >/dev/null 2>&1").exit_code == 0; }

std::string until_prompts(const std::string& out, int n) {
  return "i=0; until [ $(grep -o '] > ' " + out + " 2>/dev/null | wc -l) -ge " +
         std::to_string(n) + " ] || [ $i -ge 600 ]; do i=$((i+1)); sleep 0.05; done; ";
}

ShellRun run_on_terminal(const std::string& command, const std::string& typist,
                         const std::string& out) {
  return run_shell("{ " + typist + "; } | timeout 60 script -qfec " + shell_quote(command) +
                   " /dev/null > " + out + "; cat " + out);
}

}  // namespace parley::test
