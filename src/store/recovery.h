// What happens to a store file that failed its integrity check: it is never deleted, only
// renamed aside, and every transcript that can still be read is copied into a fresh store.
#pragma once

#include <string>

#include "store/connection.h"
#include "store/store.h"

namespace parley::store {

// Renames `path` (and its -wal, -shm, -journal companions, keeping them paired with it) to
// "<path>.corrupt-<unix time>[-n]"; returns the new name. Error(storage) if it cannot.
std::string move_aside(const std::string& path);

// Copies each session whose row can be read from the damaged file into `fresh`, with its
// turns up to the first one that cannot be read. KV is not copied: it is rebuilt from turns.
RecoveryReport salvage_transcripts(const std::string& damaged_path, const StoreOptions& options,
                                   Connection& fresh);

// The warning line for a recovery: counts, and the ids of the sessions truncated and lost
// (the first few of each), so that an application's log says which conversations suffered.
std::string describe_recovery(const std::string& path, const RecoveryReport& report);

}  // namespace parley::store
