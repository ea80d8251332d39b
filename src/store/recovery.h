// What happens to a store file that failed its integrity check: it is never deleted, only
// renamed aside, and every transcript that can still be read is copied into a fresh store.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "store/connection.h"
#include "store/store.h"

namespace parley::store {

// Renames `path` (and its -wal, -shm, -journal companions, keeping them paired with it) to
// "<path>.corrupt-<unix time>[-n]"; returns the new name. Error(storage) if it cannot.
std::string move_aside(const std::string& path);

// "<path>.recovered": a recovered copy, whole, about to take the damaged file's place.
std::string ready_copy_name(const std::string& path);

// A recovery whose process died after it moved the damaged file aside and before its copy was
// in place left no file at `path` and its copy ready beside it: the copy goes in place now
// (the damaged file's -wal and -shm, if still at `path`, go aside first). True when it did;
// false when there was nothing to finish. Throws Error(storage) if a rename fails.
bool finish_interrupted_recovery(const std::string& path);

// Opens (creates) a store file ready to be written: the store's settings and schema.
using OpenFreshStore = std::function<std::unique_ptr<Connection>(const std::string& path)>;

// Recovers the damaged store file at `path`. Each session whose row can be read is copied, with its
// turns up to the first one that cannot be read (KV is not: it is rebuilt from turns), into a new
// file beside it, whole in that file (its WAL checkpointed into it); then it is renamed
// ready_copy_name(path), the damaged file moves aside (move_aside) and the copy is renamed to
// `path`. Until the copy is ready `path` is the damaged file, whole: a recovery cut short (a
// crash, a full disk) is done again by the next open, and no process ever opens a half-filled
// store; once it is ready, the next open puts it in place (finish_interrupted_recovery). The damaged file's writers, and another process
// recovering it, wait for the copy (its write lock is held meanwhile). Returns nullopt when `path`
// was no longer the damaged file once the copy was made (another process recovered it first): open
// it again. Throws Error(storage) when the copy cannot be made or put in place (the damaged file is
// then left at `path`) or the write lock is not had within the busy timeout.
std::optional<RecoveryReport> recover_damaged_store(const std::string& path,
                                                    const StoreOptions& options,
                                                    const OpenFreshStore& open_fresh);

// The warning line for a recovery: counts, and the ids of the sessions truncated and lost
// (the first few of each), so that an application's log says which conversations suffered.
std::string describe_recovery(const std::string& path, const RecoveryReport& report);

}  // namespace parley::store
