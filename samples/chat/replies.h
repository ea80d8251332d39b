// The console's ways to get a reply: a message sent, the last reply continued, or the last
// reply generated anew. Each streams to stdout, stops on Ctrl-C, and keeps what was written.
#pragma once

#include <string>
#include <string_view>

#include "cli_args.h"
#include "sessions.h"

namespace chat {

// A message line: sent as the user's, its reply streamed.
void send_message(const CliArgs& args, Sessions::Open& open, const std::string& text);

// /continue [TEXT]: more of the last reply (one cut at --max-tokens, a stop string or
// Ctrl-C), or the reply to the last message when its reply was rewound. TEXT, when given,
// takes --reply-prefix's place: the reply goes on with it as its next words (punctuation
// joins the last one), and the model from there.
void continue_reply(const CliArgs& args, Sessions::Open& open, std::string_view steer = {});

// A reply or the rest of one, typed after a command, as the words that follow the text before
// it: after a space, unless it starts with punctuation that joins the last word (", and").
// (A chat reply's first word takes that space as its own; a raw reply continues the message.)
std::string next_words(std::string_view text);

// /retry: drops the last reply and generates it anew (the same one with a fixed --seed).
void retry_reply(const CliArgs& args, Sessions::Open& open);

// /exchange USER | REPLY: adds a message and a reply written for it, without generating.
void write_exchange(Sessions::Open& open, std::string_view arg);

// /prepare: computes now what the next message would begin with (KV from the store, the
// system prompt of a conversation not yet begun) and says what it did. Ctrl-C stops it.
void prepare_next(Sessions::Open& open);

}  // namespace chat
