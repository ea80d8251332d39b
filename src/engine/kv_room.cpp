// A session's KV writes that find the budget full: idle sessions are spilled to the store to
// make room, and the write is tried again, as one step, so that no other thread takes the
// room first.
#include <optional>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/session.h"

namespace parley::engine {

template <class Write, class Needed>
void Session::write_kv_with_room(const Write& write, const Needed& needed,
                                 const kv::BlockTable& table) const {
  const auto attempt = [&] {
    try {
      write();
      return true;
    } catch (const Error& e) {
      if (e.status() != Status::out_of_memory) throw;
      return false;
    }
  };
  if (attempt()) return;
  // Counted after the attempt, which may have taken some of the blocks it needs.
  if (engine_->write_with_room(this, {attempt, needed, table.n_blocks()})) return;
  write();  // throws the pool's out_of_memory error, unless room came
}

void Session::prepare_write(kv::BlockTable& table, uint32_t from, uint32_t to) {
  write_kv_with_room([&] { table.prepare_write(from, to); },
                     [&] { return table.blocks_to_write(from, to); }, table);
}

kv::BlockTable Session::fork_blocks(const kv::BlockTable& table, uint32_t n_filled) const {
  std::optional<kv::BlockTable> copy;
  // The table's blocks stay held beside the copy: no spill frees them.
  write_kv_with_room([&] { copy.emplace(table.fork(n_filled)); }, [] { return size_t(1); }, table);
  return std::move(*copy);
}

}  // namespace parley::engine
