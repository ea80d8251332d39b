#include "console.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace chat {
namespace {

// Ctrl-C during a reply stops that reply (the signal handler may only touch a lock-free flag;
// the text callback sees it and asks the engine to stop).
std::atomic<bool> g_stop_requested{false};

void on_sigint(int) { g_stop_requested.store(true); }

int stream_to_stdout(const char* utf8, size_t len, void*) {
  std::fwrite(utf8, 1, len, stdout);
  std::fflush(stdout);
  return g_stop_requested.load() ? 1 : 0;
}

parley_status create_session(parley_engine* engine, const CliArgs& args,
                             const std::string& system_prompt, parley_session** out) {
  parley_session_options so;
  parley_session_options_init(&so);
  if (!system_prompt.empty()) so.system_prompt = system_prompt.c_str();
  if (args.chat_template) so.chat_template = args.chat_template->c_str();
  return parley_session_create(engine, &so, out);
}

// The ids of the last reply: the last `generated` tokens of the conversation.
std::vector<int32_t> last_reply_ids(parley_session* s, uint32_t generated) {
  size_t n = 0;
  if (parley_session_get_tokens(s, nullptr, 0, &n) != PARLEY_OK) return {};
  std::vector<int32_t> ids(n);
  if (parley_session_get_tokens(s, ids.data(), ids.size(), &n) != PARLEY_OK) return {};
  return std::vector<int32_t>(ids.end() - std::min<size_t>(generated, ids.size()), ids.end());
}

void print_ids(const std::vector<int32_t>& ids) {
  std::string line = "ids:";
  for (int32_t id : ids) line += " " + std::to_string(id);
  std::printf("%s\n", line.c_str());
}

void print_stats(parley_engine* engine, const parley_turn_stats& t, bool have_turn) {
  if (have_turn) {
    std::printf("last turn: %u prompt tokens (%u reused, %u computed), %u generated; "
                "TTFT %.1f ms, TPOT %.2f ms (%.1f tok/s)\n",
                t.prompt_tokens, t.reused_tokens, t.computed_tokens, t.generated_tokens, t.ttft_ms,
                t.tpot_ms, t.tpot_ms > 0 ? 1000.0 / t.tpot_ms : 0.0);
  } else {
    std::printf("no turn yet\n");
  }
  parley_engine_stats es;
  es.struct_size = sizeof es;
  if (parley_engine_get_stats(engine, &es) == PARLEY_OK) {
    std::printf("KV: %llu bytes/token, %.1f MiB resident in %u session(s), budget %.1f MiB\n",
                (unsigned long long)es.kv_bytes_per_token, es.kv_bytes_resident / 1048576.0,
                es.sessions_active, es.kv_budget_bytes / 1048576.0);
  }
}

const char* kConsoleHelp =
    "/help          this text\n"
    "/system TEXT   set the system prompt and start a new conversation\n"
    "/reset         start a new conversation (same system prompt)\n"
    "/stats         figures of the last turn and KV memory\n"
    "/quit          leave (also Ctrl-D)\n"
    "Ctrl-C stops a reply that is being written.\n";

}  // namespace

void print_error(const char* what, parley_status status) {
  std::fprintf(stderr, "parley-chat: error: %s: %s (%s)\n", what, parley_last_error(),
               parley_status_name(status));
}

int run_one_shot(parley_engine* engine, const CliArgs& args) {
  parley_session* session = nullptr;
  parley_status st = create_session(engine, args, args.system_prompt.value_or(""), &session);
  if (st != PARLEY_OK) {
    print_error("cannot start a session", st);
    return 1;
  }
  std::signal(SIGINT, on_sigint);
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  st = parley_session_send(session, args.prompt->c_str(), &args.gen, stream_to_stdout, nullptr,
                           &stats);
  std::printf("\n");
  int rc = 0;
  if (st == PARLEY_OK || st == PARLEY_E_CANCELLED) {
    if (args.print_ids) print_ids(last_reply_ids(session, stats.generated_tokens));
    if (st == PARLEY_E_CANCELLED) {
      std::fprintf(stderr, "parley-chat: stopped\n");
      rc = 1;
    }
  } else {
    print_error("generation failed", st);
    rc = 1;
  }
  parley_session_close(session);
  return rc;
}

int run_console(parley_engine* engine, const CliArgs& args) {
  const bool interactive = ::isatty(STDIN_FILENO);
  std::string system_prompt = args.system_prompt.value_or("");
  parley_session* session = nullptr;
  parley_status st = create_session(engine, args, system_prompt, &session);
  if (st != PARLEY_OK) {
    print_error("cannot start a session", st);
    return 1;
  }
  std::signal(SIGINT, on_sigint);
  if (interactive) {
    parley_model_info info;
    info.struct_size = sizeof info;
    if (parley_engine_get_model_info(engine, &info) == PARLEY_OK) {
      std::printf("parley %s | %s | %s | template %s | context %u\nType /help for commands.\n",
                  parley_version(), info.name, info.backend, info.chat_template,
                  info.context_length);
    }
  }
  parley_turn_stats last{};
  bool have_turn = false;
  std::string line;
  for (;;) {
    if (interactive) {
      std::printf("> ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/help") {
      std::printf("%s", kConsoleHelp);
      continue;
    }
    if (line == "/stats") {
      print_stats(engine, last, have_turn);
      continue;
    }
    if (line == "/reset" || line.rfind("/system", 0) == 0) {
      if (line != "/reset") system_prompt = line.size() > 8 ? line.substr(8) : "";
      parley_session* fresh = nullptr;
      st = create_session(engine, args, system_prompt, &fresh);
      if (st != PARLEY_OK) {
        print_error("cannot start a session", st);
        continue;
      }
      parley_session_close(session);
      session = fresh;
      have_turn = false;
      std::printf("(new conversation)\n");
      continue;
    }
    if (!line.empty() && line[0] == '/') {
      std::printf("unknown command %s (try /help)\n", line.c_str());
      continue;
    }
    g_stop_requested.store(false);
    parley_turn_stats stats;
    stats.struct_size = sizeof stats;
    st = parley_session_send(session, line.c_str(), &args.gen, stream_to_stdout, nullptr, &stats);
    std::printf("\n");
    if (st == PARLEY_OK || st == PARLEY_E_CANCELLED) {
      last = stats;
      have_turn = true;
      if (st == PARLEY_E_CANCELLED) std::printf("[stopped]\n");
      if (args.print_ids) print_ids(last_reply_ids(session, stats.generated_tokens));
    } else {
      print_error("send failed", st);
    }
  }
  parley_session_close(session);
  return 0;
}

}  // namespace chat
