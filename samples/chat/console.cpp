#include "console.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "id_quoting.h"
#include "new_session.h"
#include "output.h"
#include "replies.h"
#include "score_command.h"
#include "session_commands.h"
#include "sessions.h"
#include "stats_report.h"
#include "store_commands.h"
#include "transfer_commands.h"

namespace chat {
namespace {

const char* kConsoleHelp =
    "/help          this text\n"
    "/new [ID]      start another conversation (command line's system prompt and template)\n"
    "               and switch to it; without ID one is made up\n"
    "/switch ID     continue another open conversation\n"
    "/fork [ID]     copy the current conversation into a new one and switch to the copy\n"
    "/rewind N      drop the last N messages (a message and its reply are two)\n"
    "/continue      more of the last reply (cut at --max-tokens, a stop string or Ctrl-C)\n"
    "/continue TEXT the same, the reply going on with the words TEXT first (punctuation such\n"
    "               as \", and\" joins its last word)\n"
    "/retry         drop the last reply and write it anew (the same one with a fixed --seed)\n"
    "/exchange U | R  add the message U and the reply R, written, without generating; under\n"
    "               the raw template R is U's next words (joined as /continue TEXT joins)\n"
    "/score M | R1 | R2 ...  how likely the model finds each reply R to the message M (best\n"
    "               first); nothing is added to the conversation\n"
    "/score-next T1 | T2 ...  the same for ways the last reply may go on (as /continue T)\n"
    "/prepare       compute now what the next message would begin with: the KV of a stored\n"
    "               conversation, or the system prompt of one not yet begun\n"
    "/close ID      close an open conversation (with --store it stays stored)\n"
    "/sessions      list the open conversations: turns, tokens, state, KV bytes resident and\n"
    "               stored (* = current); with --store also the stored ones not open here\n"
    "/open ID       reopen a stored conversation and switch to it\n"
    "/suspend       move the current conversation's KV to the store; the next message\n"
    "               brings it back\n"
    "/delete ID     delete a stored conversation that is not open here\n"
    "/export FILE   write the current conversation to FILE as JSON (texts and token ids); a\n"
    "               FILE already there is replaced only when empty or holding a JSON object\n"
    "               (as /export writes), never the store, the model or a file in its folder\n"
    "/import FILE [ID]  a conversation /export wrote (here or elsewhere, another model's too)\n"
    "               as a new one, id ID or the file's, and switch to it\n"
    "/system TEXT   go on under TEXT as the system prompt, every message kept (the next\n"
    "               message computes the conversation again); /system alone removes it\n"
    "/reset         replace the current conversation with a new one (same system prompt)\n"
    "/stats         the last turn (its new prompt tokens; the conversation's tokens whose KV\n"
    "               was reused or computed; speed), KV memory and the store\n"
    "/quit, /exit   leave (also Ctrl-D); open conversations are closed, which with --store\n"
    "               spills their KV to it, so --session ID or /open ID continues them\n"
    "With --store, the turns of a conversation the store refused (another program changed\n"
    "it, a full disk) go to FILE.unsaved-ID-TIME.json beside it (or in $TMPDIR, or else\n"
    "onto stderr) when it is closed (/close, /reset, leaving; the exit status is then 1):\n"
    "/import FILE NEWID goes on with it.\n"
    "An ID with blanks in it or at its ends goes in double quotes, as /sessions shows it:\n"
    "/open \"  my id \" (inside the quotes \\\" is a quote and \\\\ a backslash).\n"
    "A line whose first non-blank character is / is a command (words after one that takes\n"
    "none are refused). Any other line is a message (blank lines are skipped); a message\n"
    "that begins with / is typed with // (//x sends /x). Ctrl-C stops a reply that is\n"
    "being written; SIGTERM and SIGHUP stop it too, then leave as Ctrl-D does.\n";

struct Command {
  std::string_view name;  // "/new"
  std::string_view arg;   // the rest of the line, without surrounding blanks
};

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// `line` starts with the command's name, which ends at a blank (a space or a tab).
Command parse_command(std::string_view line) {
  const auto blank = line.find_first_of(" \t");
  if (blank == std::string_view::npos) return {trim(line), {}};
  return {line.substr(0, blank), trim(line.substr(blank + 1))};
}

// Where the command in `line` starts: at its first non-blank character, when that is a '/'
// that no second one follows (blanks typed before a command do not make it a message);
// npos for a message.
size_t command_start(std::string_view line) {
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos || line[first] != '/') return std::string_view::npos;
  return line.compare(first, 2, "//") == 0 ? std::string_view::npos : first;
}

// A message line as it is sent: "//x" is the message "/x" (blanks before it stay).
std::string message_text(std::string line) {
  const auto first = line.find_first_not_of(" \t");
  if (line.compare(first, 2, "//") == 0) line.erase(first, 1);
  return line;
}

// The commands that take nothing after their name: more is refused, as /rewind refuses words
// after N, rather than ignored (a /quit that says more may not mean to leave).
bool refuses_argument(const Command& c) {
  static constexpr std::string_view kBare[] = {
      "/help", "/quit", "/exit", "/stats", "/reset", "/retry", "/prepare", "/suspend", "/sessions"};
  if (c.arg.empty()) return false;
  for (const auto name : kBare) {
    if (c.name == name) return true;
  }
  return false;
}

// The template shown is the first conversation's (a flag's, or a stored one's own).
void print_banner(parley_engine* engine, parley_session* first) {
  parley_model_info info;
  info.struct_size = sizeof info;
  const auto session = info_of(first);
  if (parley_engine_get_model_info(engine, &info) == PARLEY_OK && session) {
    std::printf("parley %s | %s | %s | template %s | context %u\nType /help for commands.\n",
                parley_version(), info.name, info.backend, session->chat_template,
                info.context_length);
  }
}

enum class InputLine {
  line,         // `line` holds one, its CRLF's CR dropped
  interrupted,  // Ctrl-C at an interactive prompt: said how to leave; ask again
  refused,      // a line the console cannot act on (it holds a NUL byte): said; skip it
  end,          // end of input
  failed,       // stdin could not be read (a directory, a terminal gone): said
};

// How a read of stdin ended.
enum class Read { line, interrupted, end, failed };

// After a getline of std::cin that began with errno 0: a read error (which getline takes as
// the end of input) is no end, and a line it cut short is not the line typed.
Read outcome_of(bool got, int* error) {
  if (!std::cin.bad() && std::ferror(stdin) == 0) return got ? Read::line : Read::end;
  *error = errno != 0 ? errno : EIO;
  return Read::failed;
}

// A line; at a prompt, a Ctrl-C ends the wait. `*error`: the errno of a failed read.
Read read_line(std::string& line, const std::string& prompt, int* error) {
  if (prompt.empty()) {
    errno = 0;
    return outcome_of(bool(std::getline(std::cin, line)), error);
  }
  clear_stop_request();
  ctrl_c_ends_reads(true);  // else the read goes on after a Ctrl-C, which is then lost
  std::printf("%s", prompt.c_str());
  std::fflush(stdout);
  errno = 0;
  const bool got = bool(std::getline(std::cin, line));
  const int read_errno = errno;
  ctrl_c_ends_reads(false);  // a Ctrl-C during a reply stops the reply only
  if (!got && stop_requested()) {
    std::cin.clear();
    std::clearerr(stdin);
    return Read::interrupted;
  }
  errno = read_errno;
  return outcome_of(got, error);
}

// A text editor may begin a UTF-8 file with a byte-order mark; it is not part of the line.
void drop_byte_order_mark(std::string& line) {
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
}

// Reads the next line of stdin into `line`. `prompt` (a terminal's) is shown first; Ctrl-C
// then ends the wait for the line. Without one a Ctrl-C between replies changes nothing.
// `first`: the first line of the input. A SIGTERM or SIGHUP ends the input.
InputLine read_input_line(std::string& line, const std::string& prompt, bool first) {
  int error = 0;
  const Read read = read_line(line, prompt, &error);
  if (terminating_signal() != 0) return InputLine::end;  // also for a line read before it
  if (read == Read::end) return InputLine::end;
  if (read == Read::interrupted) {
    std::printf("\n(Ctrl-D or /quit leaves)\n");
    return InputLine::interrupted;
  }
  if (read == Read::failed) {
    std::fflush(stdout);
    std::fprintf(stderr, "parley-chat: error: cannot read standard input: %s\n",
                 std::strerror(error));
    return InputLine::failed;
  }
  if (first) drop_byte_order_mark(line);
  if (!line.empty() && line.back() == '\r') line.pop_back();  // a line of CRLF input
  // Every message, id and path goes on as a C string, which would end at the NUL.
  if (line.find('\0') != std::string::npos) {
    std::printf("(line ignored: it holds a NUL byte, which no message or command can)\n");
    return InputLine::refused;
  }
  return InputLine::line;
}

// The open conversations, then the stored ones that are not open.
void list_sessions(const SessionCommands& commands, const StoreCommands& store) {
  commands.list();
  store.list_not_open();
}

// Runs `command` on the id that `arg` names; says so instead when it cannot be read.
template <class IdCommand>
void with_id(std::string_view arg, IdCommand&& command) {
  const auto id = read_id(arg);
  if (!id) {
    print_unreadable_id(arg);
    return;
  }
  command(*id);
}

// False: not a command this console knows.
bool run_command(const Command& c, parley_engine* engine, SessionCommands& commands,
                 StoreCommands& store, TransferCommands& transfer) {
  if (c.name == "/help") std::printf("%s", kConsoleHelp);
  else if (c.name == "/continue")
    continue_reply(commands.args, commands.sessions.current(), c.arg);
  else if (c.name == "/retry") retry_reply(commands.args, commands.sessions.current());
  else if (c.name == "/prepare") prepare_next(commands.sessions.current());
  else if (c.name == "/score") score_replies(commands.sessions.current(), c.arg);
  else if (c.name == "/score-next") score_next(commands.sessions.current(), c.arg);
  else if (c.name == "/exchange") write_exchange(commands.sessions.current(), c.arg);
  else if (c.name == "/stats") print_stats(engine, commands.sessions.current().last_turn);
  else if (c.name == "/new") with_id(c.arg, [&](const auto& id) { commands.start_new(id); });
  else if (c.name == "/switch") with_id(c.arg, [&](const auto& id) { commands.switch_to(id); });
  else if (c.name == "/fork") with_id(c.arg, [&](const auto& id) { commands.fork(id); });
  else if (c.name == "/rewind") commands.rewind(c.arg);
  else if (c.name == "/close") with_id(c.arg, [&](const auto& id) { commands.close(id); });
  else if (c.name == "/sessions") list_sessions(commands, store);
  else if (c.name == "/open") with_id(c.arg, [&](const auto& id) { store.open(id); });
  else if (c.name == "/suspend") store.suspend();
  else if (c.name == "/delete") with_id(c.arg, [&](const auto& id) { store.remove(id); });
  else if (c.name == "/export") transfer.export_to(c.arg);
  else if (c.name == "/import") transfer.import_from(c.arg);
  else if (c.name == "/reset") commands.reset();
  else if (c.name == "/system") commands.set_system_prompt(c.arg);
  else return false;
  return true;
}

}  // namespace

int run_console(parley_engine* engine, const CliArgs& args) {
  const bool interactive = ::isatty(STDIN_FILENO);
  Sessions sessions{engine, args.store_path};
  parley_session* first = nullptr;
  bool reopened = false;
  parley_status st = start_first_session(engine, args, &first, &reopened);
  if (st == PARLEY_OK) {
    st = sessions.add(first, !reopened);
  }
  if (st != PARLEY_OK) {
    print_error("cannot start a session", st);
    return 1;
  }
  stop_replies_on_signals();
  if (interactive) print_banner(engine, sessions.current().session.get());
  if (reopened) announce_reopened(sessions);
  SessionCommands commands{engine, args, sessions};
  StoreCommands store{engine, args, sessions};
  TransferCommands transfer{engine, args, sessions};
  std::string line;
  // What stdout was last given, named when it could not be written.
  std::string written = "the console's output";
  bool first_line = true;
  bool input_failed = false;  // the conversations are closed (and stored) as at the end
  // Once stdout cannot be written, no reply or outcome would be seen: stop there.
  while (flush_stdout()) {
    const std::string prompt = interactive ? "[" + shown_id(sessions.current().id) + "] > " : "";
    written = "the console's output";
    const InputLine input = read_input_line(line, prompt, first_line);
    input_failed = input == InputLine::failed;
    if (input == InputLine::end || input_failed) break;
    if (input != InputLine::interrupted) first_line = false;
    if (input != InputLine::line || trim(line).empty()) continue;  // nothing to say
    const size_t start = command_start(line);
    if (start == std::string::npos) {
      written = "the reply";
      send_message(args, sessions.current(), message_text(line));
      continue;
    }
    const Command command = parse_command(std::string_view(line).substr(start));
    written = "the output of " + std::string(command.name);
    if (refuses_argument(command)) {
      std::printf("usage: %.*s (nothing after it)\n", int(command.name.size()),
                  command.name.data());
      continue;
    }
    if (command.name == "/quit" || command.name == "/exit") break;
    if (!run_command(command, engine, commands, store, transfer)) {
      std::printf("unknown command %.*s (try /help)\n", int(command.name.size()),
                  command.name.data());
    }
  }
  const bool output_written = finish_stdout(written.c_str());
  // A conversation whose turns the store refused fails the run, also when a file keeps them.
  sessions.close_all();
  if (terminating_signal() != 0) return 128 + terminating_signal();  // as the shell tells it
  return output_written && sessions.all_stored() && !input_failed ? 0 : 1;
}

}  // namespace chat
