// Sending and going on with replies in format JSON over the C API, shared by the JSON format's
// and the JSON Schema's tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "parley.h"
#include "support/c_api_sessions.h"

namespace parley::test {

struct Reply {
  parley_status status;
  std::string streamed;
  parley_turn_stats stats;
};

inline Reply send(parley_session* s, const char* text, const parley_generate_options& g) {
  Reply r{};
  r.stats.struct_size = sizeof r.stats;
  r.status = parley_session_send(s, text, &g, append_text, &r.streamed, &r.stats);
  return r;
}

// What a reply cut short became after parley_session_continue calls: the text they streamed,
// and whether its object closed.
struct Continued {
  std::string text;
  bool closed = false;
};

// Goes on with `more` (seeds 100, 101, ...) until the object closes or `tries` calls are spent.
inline Continued continue_until_closed(parley_session* s, parley_generate_options more,
                                       int tries) {
  Continued c;
  for (int i = 0; i < tries && !c.closed; ++i) {
    more.seed = 100 + uint64_t(i);
    std::string streamed;
    parley_turn_stats stats{};
    stats.struct_size = sizeof stats;
    REQUIRE_MESSAGE(parley_session_continue(s, &more, append_text, &streamed, &stats) == PARLEY_OK,
                    parley_last_error());
    c.text += streamed;
    c.closed = stats.stop_reason == PARLEY_STOP_FORMAT_END;
  }
  return c;
}

}  // namespace parley::test
