// /stats: figures of the current session's last turn (work, speed, where its KV came from) and
// of the engine (KV memory, session states, store size).
#pragma once

#include <optional>

#include "parley.h"

namespace chat {

// `last_turn` nullopt: prints "no turn yet".
void print_stats(parley_engine* engine, const std::optional<parley_turn_stats>& last_turn);

}  // namespace chat
