// A conversation as portable JSON (parley.h, parley_session_export): its header and its
// messages, each with the token ids it added. The reader checks the shape and types of every
// field and names the first that is wrong; what the ids mean is the session's to check.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace parley::engine {

struct ConversationJson {
  store::StoredSession header;            // its model_fingerprint is 0 when the file has none
  bool has_created_ms = false;
  std::vector<store::StoredTurn> turns;   // role as PARLEY_ROLE_*; replies without "closed" open
  bool has_token_ids = false;             // every message carries its ids
};

std::string write_conversation_json(const store::StoredSession& header,
                                    const std::vector<store::StoredTurn>& turns);
// Throws Error(invalid_argument) naming what is wrong.
ConversationJson read_conversation_json(std::string_view json);

}  // namespace parley::engine
