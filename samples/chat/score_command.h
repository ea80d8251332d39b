// /score: how likely the model finds each of several replies to a message, best first, with
// nothing added to the conversation.
#pragma once

#include <string_view>

#include "sessions.h"

namespace chat {

// `arg` is "MESSAGE | REPLY | REPLY ...": at least one reply; blanks around each part are
// dropped. Prints a usage line when it is not.
void score_replies(Sessions::Open& open, std::string_view arg);

}  // namespace chat
