#include "replay.h"

#include <doctest/doctest.h>

namespace parley::test {
namespace {

struct StopAt {
  parley_session* s;
  uint32_t pieces_left;  // every reply token of the hardening model is one non-empty piece
};

int interrupt_at_last_piece(const char*, size_t, void* user) {
  auto* stop = static_cast<StopAt*>(user);
  if (stop->pieces_left > 0 && --stop->pieces_left == 0) parley_session_interrupt(stop->s);
  return 0;
}

}  // namespace

Transcript replay(parley_engine* e, const std::vector<TurnRecord>& turns) {
  parley_session_options so;
  parley_session_options_init(&so);
  so.chat_template = "raw";
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(e, &so, &s) == PARLEY_OK);
  for (size_t i = 0; i < turns.size(); ++i) {
    const TurnRecord& t = turns[i];
    CAPTURE(i);
    const auto g = greedy_options(t.max_tokens);
    StopAt stop{s, t.cancelled ? t.generated : 0};
    parley_turn_stats stats;
    stats.struct_size = sizeof stats;
    const parley_status st =
        parley_session_send(s, t.text.c_str(), &g, interrupt_at_last_piece, &stop, &stats);
    REQUIRE(st == (t.cancelled ? PARLEY_E_CANCELLED : PARLEY_OK));
    REQUIRE(stats.generated_tokens == t.generated);
  }
  Transcript out;
  REQUIRE(read_transcript(s, out) == PARLEY_OK);
  parley_session_close(s);
  return out;
}

}  // namespace parley::test
