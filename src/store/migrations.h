// The file format's identity and versions: application_id says "this is a Parley store",
// PRAGMA user_version is the schema version (raised by forward migrations), and the meta row
// compatible_version is the oldest schema version whose code can still use the file, so a
// newer file that only added columns still opens here.
#pragma once

#include <cstdint>
#include <string>

#include "store/connection.h"

namespace parley::store {

inline constexpr int64_t kApplicationId = 1347570777;  // 'PRLY'
inline constexpr int64_t kSchemaVersion = 3;           // the number of migrations below

// What the file's header says, read without writing anything. Throws SqliteError; a damaged
// file (not a database, corrupt header) shows as is_damaged_file_code(e.code()).
struct FileIdentity {
  int64_t application_id = 0;
  int64_t user_version = 0;
  int64_t page_count = 0;      // 0: a new, empty file
  int64_t schema_objects = 0;  // tables, indexes, ... of any owner
};
FileIdentity read_identity(Connection& connection);

// Error(corrupt) "not a Parley store" unless the file is ours or empty.
void require_parley_file(const FileIdentity& identity, const std::string& path);

// Applies the missing migrations in one write transaction (and stamps a new file with the
// application_id). A file at a newer user_version is left as it is.
void migrate(Connection& connection);

// Error(corrupt) "made by a newer Parley" when the file's compatible_version is above
// kSchemaVersion.
void require_compatible_version(Connection& connection, const std::string& path);

}  // namespace parley::store
