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

// Only a column, a meta row and triggers: version 1 code still reads and writes the file, and
// its writes fire the triggers, so compatible_version stays 1.
void add_revisions_v2(Connection& connection) {
  connection.exec(revision_schema_v2(), "add session revisions");
}

// Only a nullable column: older code still reads the KV rows, and the rows it writes have no
// tail hash, so their tails are recomputed; compatible_version stays as it is.
void add_tail_hash_v3(Connection& connection) {
  connection.exec(tail_hash_schema_v3(), "add KV tail hashes");
}

constexpr std::array<Migration, 3> kMigrations = {&create_tables_v1, &add_revisions_v2,
                                                  &add_tail_hash_v3};
static_assert(kMigrations.size() == kSchemaVersion);

}  // namespace

FileIdentity read_identity(Connection& connection) {
  // One statement, so one snapshot: read piece by piece, a store that another process is
  // creating at the same moment could look half made (no application_id yet, but tables).
  auto statement = connection.statement(
      "SELECT (SELECT application_id FROM pragma_application_id),"
      " (SELECT user_version FROM pragma_user_version),"
      " (SELECT page_count FROM pragma_page_count),"
      " (SELECT count(*) FROM sqlite_schema)",
      "read the file's identity");
  require(statement->step(), Status::storage, "reading the file's identity returned nothing");
  FileIdentity identity;
  identity.application_id = statement->int64_at(0);
  identity.user_version = statement->int64_at(1);
  identity.page_count = statement->int64_at(2);
  identity.schema_objects = statement->int64_at(3);
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
