// The expected transcript of a conversation, computed independently: its turns replayed one
// after another in a session of its own, in an engine with no store and no budget pressure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api_helpers.h"
#include "parley.h"

namespace parley::test {

// One turn as its caller saw it.
struct TurnRecord {
  std::string text;
  uint32_t max_tokens = 0;
  uint32_t generated = 0;  // reply tokens (parley_turn_stats.generated_tokens)
  bool cancelled = false;  // stopped by parley_session_interrupt() after `generated` tokens
};

// Replays `turns` greedily in a new raw-template session of `e`. A cancelled turn is
// reproduced by an interrupt from its own callback at its last token: send() sees it before
// the next token, which is where an interrupt from another thread takes effect too. Fails the
// test (REQUIRE) when a replayed turn does not end as recorded.
Transcript replay(parley_engine* e, const std::vector<TurnRecord>& turns);

}  // namespace parley::test
