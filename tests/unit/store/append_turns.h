// Turns added after those a stored session has, as a conversation's next turns are committed:
// Store::replace_turns_from with nothing to replace.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "store/store.h"

namespace parley::store {

inline void append_turns(Store& store, const std::string& id, uint32_t first_index,
                         std::span<const StoredTurn> turns) {
  store.replace_turns_from(id, first_index, first_index, turns);
}

}  // namespace parley::store
