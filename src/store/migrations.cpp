#include "store/migrations.h"

#include <array>

#include "store/schema.h"

namespace parley::store {
namespace {

// Migration i takes a file from user_version i to i + 1. A shipped migration is never edited:
// files in the field were made by it. A change that older code cannot read raises
// compatible_version in its own migration; one that only adds columns or tables does not.
using Migration = void (*)(Connection&);

void create_tables_v1(Connection& connection) {
  connection.exec(content_schema_v1(), "create content tables");
  connection.exec(kv_schema_v1(), "create KV tables");
  connection.exec("INSERT INTO meta (key, value) VALUES ('compatible_version', 1)",
                  "write compatible_version");
}

constexpr std::array<Migration, 1> kMigrations = {&create_tables_v1};
static_assert(kMigrations.size() == kSchemaVersion);

}  // namespace

FileIdentity read_identity(Connection& connection) {
  FileIdentity identity;
  identity.application_id = connection.query_int64("PRAGMA application_id", "read application_id");
  identity.user_version = connection.query_int64("PRAGMA user_version", "read user_version");
  identity.page_count = connection.query_int64("PRAGMA page_count", "read page_count");
  identity.schema_objects =
      connection.query_int64("SELECT count(*) FROM sqlite_schema", "read the schema");
  return identity;
}

void require_parley_file(const FileIdentity& identity, const std::string& path) {
  if (identity.application_id == kApplicationId) return;
  // A blank SQLite file (no tables, version 0) becomes a store; anything else belongs to
  // some other program and is not touched.
  const bool blank =
      identity.application_id == 0 && identity.user_version == 0 && identity.schema_objects == 0;
  require(blank, Status::corrupt,
          path + " is not a Parley store (application_id " +
              std::to_string(identity.application_id) + ")");
}

void migrate(Connection& connection) {
  if (connection.query_int64("PRAGMA user_version", "read user_version") >= kSchemaVersion) {
    return;
  }
  WriteTransaction transaction(connection);
  // Read again under the write lock: another process may have migrated meanwhile.
  const int64_t version = connection.query_int64("PRAGMA user_version", "read user_version");
  if (version >= kSchemaVersion) return;
  if (version == 0) {
    connection.exec("PRAGMA application_id = " + std::to_string(kApplicationId),
                    "write application_id");
  }
  for (int64_t step = version; step < kSchemaVersion; ++step) {
    kMigrations[static_cast<size_t>(step)](connection);
  }
  connection.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion), "write user_version");
  transaction.commit();
}

void require_compatible_version(Connection& connection, const std::string& path) {
  auto statement = connection.statement("SELECT value FROM meta WHERE key = 'compatible_version'",
                                        "read compatible_version");
  require(statement->step(), Status::corrupt,
          path + " is not a Parley store (it has no compatible_version)");
  const int64_t compatible = statement->int64_at(0);
  require(compatible <= kSchemaVersion, Status::corrupt,
          path + " was made by a newer Parley (it needs schema version " +
              std::to_string(compatible) + "; this build reads up to " +
              std::to_string(kSchemaVersion) + ")");
}

}  // namespace parley::store
