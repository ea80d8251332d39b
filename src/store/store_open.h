// Opening a store file: identity checks, quick_check, connection settings, migrations, and
// the hand-over to recovery when the file is damaged.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "store/connection.h"
#include "store/store.h"

namespace parley::store {

struct OpenedStore {
  std::unique_ptr<Connection> db;
  std::optional<RecoveryReport> recovery;  // set when the file was damaged and replaced
};

OpenedStore open_store(const std::string& path, const StoreOptions& options);

}  // namespace parley::store
