#include "replies.h"

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bar_parts.h"
#include "output.h"
#include "parley.h"
#include "state_names.h"

namespace chat {
namespace {

bool drops_oldest(parley_session* s) {
  const auto info = info_of(s);
  return info && info->overflow == PARLEY_OVERFLOW_DROP_OLDEST;
}

// After PARLEY_E_CONTEXT_FULL: the way out, which depends on what filled the context.
// `for_message`: a message was refused (else more of the last reply).
void print_context_full_hint(Sessions::Open& open, bool for_message) {
  const char* hint = nullptr;
  if (for_message && nothing_said(open.session.get())) {
    // Nothing to drop or start afresh: only the message itself can change.
    hint = "(the message alone is too long for the context: send a shorter one, or split it "
           "over several messages)";
  } else if (drops_oldest(open.session.get())) {
    // The library dropped what it could already.
    hint = for_message ? "(the message does not fit even after dropping the older exchanges: "
                         "send a shorter one)"
                       : "(the reply cannot go on even after dropping the older exchanges: "
                         "send a message, or /reset or /new starts another conversation)";
  } else {
    hint = "(the conversation fills the context: /reset or /new starts another, /rewind N "
           "drops messages, --overflow drop-oldest forgets old ones)";
  }
  std::fprintf(stderr, "%s\n", hint);
}

// Runs one generating call (send or continue) with the command line's options; prints its
// outcome. `what` names it in an error; `for_message`: a send. `call(options, stats, wrote)`
// streams with stream_and_note(..., wrote).
template <class Call>
void generate(const CliArgs& args, Sessions::Open& open, const char* what, bool for_message,
              Call&& call) {
  clear_stop_request();
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  parley_status st = PARLEY_OK;
  bool wrote = false;
  {
    const InterruptOnCtrlC stop(open.session.get());
    const GenerateOptions gen(args);
    st = call(gen.get(), &stats, &wrote);
  }
  // A reply ends its line; a call refused before any reply adds no empty one to stdout.
  if (st == PARLEY_OK || st == PARLEY_E_CANCELLED || wrote) std::printf("\n");
  if (st == PARLEY_OK || st == PARLEY_E_CANCELLED) {
    open.last_turn = stats;
    if (st == PARLEY_E_CANCELLED) std::printf("[stopped]\n");
    if (args.print_ids) print_ids(last_reply_ids(open.session.get()));
  } else {
    print_error(what, st);
    if (st == PARLEY_E_CONTEXT_FULL) print_context_full_hint(open, for_message);
  }
}

bool uses_raw_template(parley_session* s) {
  const auto info = info_of(s);
  return info && std::string_view(info->chat_template) == "raw";
}

// A reply typed after /exchange, as the conversation is to hold it. A raw reply continues the
// message, so it is its next words; a chat reply is a message of its own, kept as typed.
std::string written_reply(parley_session* s, const std::string& typed) {
  return uses_raw_template(s) ? next_words(typed) : typed;
}

}  // namespace

std::string next_words(std::string_view text) {
  if (text.empty()) return {};
  const bool joins = std::string_view(",.;:!?'\")]").find(text.front()) != std::string_view::npos;
  return (joins ? "" : " ") + std::string(text);
}

void send_message(const CliArgs& args, Sessions::Open& open, const std::string& text) {
  generate(args, open, "send failed", true,
           [&](const parley_generate_options* o, parley_turn_stats* stats, bool* wrote) {
             return parley_session_send(open.session.get(), text.c_str(), o, stream_and_note, wrote,
                                        stats);
           });
}

void continue_reply(const CliArgs& args, Sessions::Open& open, std::string_view steer) {
  const std::string prefix = next_words(steer);
  generate(args, open, "continue failed", false,
           [&](const parley_generate_options* o, parley_turn_stats* stats, bool* wrote) {
             parley_generate_options steered = *o;
             if (!prefix.empty()) steered.reply_prefix = prefix.c_str();
             return parley_session_continue(open.session.get(), &steered, stream_and_note, wrote,
                                            stats);
           });
}

void retry_reply(const CliArgs& args, Sessions::Open& open) {
  parley_session* s = open.session.get();
  const std::optional<parley_turn> last = last_turn(s);
  const int32_t role = last ? last->role : -1;
  if (role != PARLEY_ROLE_ASSISTANT && role != PARLEY_ROLE_USER) {
    std::printf("no reply to retry: send a message first\n");
    return;
  }
  if (role == PARLEY_ROLE_ASSISTANT) {
    const parley_status st = parley_session_rewind(s, 1);
    if (st != PARLEY_OK) {
      print_error("retry failed", st);
      return;
    }
  }
  continue_reply(args, open);
}

void write_exchange(Sessions::Open& open, std::string_view arg) {
  const std::vector<std::string> parts = split_bars(arg);
  if (parts.size() != 2) {
    std::printf("usage: /exchange USER MESSAGE | REPLY\n");
    return;
  }
  // A blank message says nothing, as a blank line does (the reply may be empty).
  if (parts[0].empty()) {
    std::printf("usage: /exchange USER MESSAGE | REPLY: the message may not be blank\n");
    return;
  }
  clear_stop_request();
  parley_status st = PARLEY_OK;
  {
    const InterruptOnCtrlC stop(open.session.get());
    st = parley_session_add_exchange(open.session.get(), parts[0].c_str(),
                                     written_reply(open.session.get(), parts[1]).c_str());
  }
  if (st != PARLEY_OK) {
    print_error("exchange failed", st);
    return;
  }
  std::printf("(added: a message and its reply)\n");
}

void prepare_next(Sessions::Open& open) {
  clear_stop_request();
  parley_turn_stats stats;
  stats.struct_size = sizeof stats;
  parley_status st = PARLEY_OK;
  {
    const InterruptOnCtrlC stop(open.session.get());
    st = parley_session_prepare(open.session.get(), &stats);
  }
  if (st != PARLEY_OK && st != PARLEY_E_CANCELLED) {
    print_error("prepare failed", st);
    return;
  }
  // Worded as /stats words a turn's KV: tokens of the conversation, not of a message.
  std::printf("(prepared: KV of %u tokens reused, %u computed; KV %s, restore %.2f ms)%s\n",
              stats.reused_tokens, stats.computed_tokens, kv_source_name(stats.kv_source),
              stats.restore_ms, st == PARLEY_E_CANCELLED ? " [stopped]" : "");
}

}  // namespace chat
