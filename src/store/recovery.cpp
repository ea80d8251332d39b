#include "store/recovery.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <system_error>

#include "common/shown_id.h"
#include "store/transcript_rows.h"

namespace parley::store {
namespace {

namespace fs = std::filesystem;
using transcript_rows::Lookup;
// The damaged file may be of an older version, without sessions.revision.
constexpr auto kSkip = transcript_rows::Revision::skip;

constexpr const char* kCompanionSuffixes[] = {"-wal", "-shm", "-journal"};

std::string unused_aside_name(const std::string& path) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string base =
      path + ".corrupt-" +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count());
  std::string name = base;
  for (int n = 2;; ++n) {
    std::error_code ec;
    bool taken = fs::exists(name, ec);
    for (const char* suffix : kCompanionSuffixes) taken = taken || fs::exists(name + suffix, ec);
    if (!taken) return name;
    name = base + "-" + std::to_string(n);
  }
}

void rename_or_fail(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  require(!ec, Status::storage,
          "cannot move the damaged store " + from + " aside to " + to + ": " + ec.message());
}

// A read that fails on a damaged page is treated as "not readable", whichever way it failed.
template <class Read>
auto try_read(Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Through the index first, then by scanning the table: either b-tree may be the broken one.
std::optional<transcript_rows::SessionRow> read_session(Connection& db, const std::string& id) {
  const auto select = [&](Lookup lookup) {
    return try_read([&] { return transcript_rows::select_session(db, id, lookup, kSkip); });
  };
  auto row = select(Lookup::by_index);
  return row ? row : select(Lookup::by_table_scan);
}

std::optional<StoredTurn> read_turn(Connection& db, const std::string& id, int64_t idx) {
  auto turn = try_read([&] { return transcript_rows::select_turn(db, id, idx, Lookup::by_index); });
  if (turn) return turn;
  return try_read([&] { return transcript_rows::select_turn(db, id, idx, Lookup::by_table_scan); });
}

void copy_session(Connection& fresh, const StoredSession& session,
                  const std::vector<StoredTurn>& turns) {
  WriteTransaction transaction(fresh);
  transcript_rows::insert_session(fresh, session);
  for (size_t i = 0; i < turns.size(); ++i) {
    transcript_rows::insert_turn(fresh, session.id, static_cast<int64_t>(i), turns[i]);
  }
  transcript_rows::update_turn_count(fresh, session.id, static_cast<int64_t>(turns.size()),
                                     session.updated_ms);
  transaction.commit();
}

// Reading the damaged file without a checkpoint leaves a -shm beside it, and a -wal (empty
// when the file had none). The -shm is only an index any later reader rebuilds from the -wal,
// and an empty -wal holds nothing: neither is left behind. A -wal with frames is part of the
// damaged database and stays with it.
void remove_reader_leftovers(const std::string& path) {
  std::error_code ec;
  const std::string wal = path + "-wal";
  if (fs::is_regular_file(wal, ec) && fs::file_size(wal, ec) == 0 && !ec) fs::remove(wal, ec);
  fs::remove(path + "-shm", ec);
}

// The connection to the damaged file; when it is done, what it left beside the file goes.
struct DamagedFile {
  std::string path;
  std::optional<Connection> db;
  ~DamagedFile() {
    db.reset();  // closed first: SQLite deletes nothing itself (no checkpoint on close)
    remove_reader_leftovers(path);
  }
};

// "2 (a, b)" or, past kNamed ids, "40 (a, b, ... and 38 more)".
std::string count_and_ids(const std::vector<std::string>& ids) {
  constexpr size_t kNamed = 10;
  std::string text = std::to_string(ids.size());
  if (ids.empty()) return text;
  text += " (";
  for (size_t i = 0; i < ids.size() && i < kNamed; ++i) text += (i ? ", " : "") + shown_id(ids[i]);
  if (ids.size() > kNamed) text += ", ... and " + std::to_string(ids.size() - kNamed) + " more";
  return text + ")";
}

}  // namespace

std::string move_aside(const std::string& path) {
  const std::string aside = unused_aside_name(path);
  rename_or_fail(path, aside);
  for (const char* suffix : kCompanionSuffixes) {
    std::error_code ec;
    if (fs::exists(path + suffix, ec)) rename_or_fail(path + suffix, aside + suffix);
  }
  return aside;
}

RecoveryReport salvage_transcripts(const std::string& damaged_path, const StoreOptions& options,
                                   Connection& fresh) {
  RecoveryReport report;
  DamagedFile file{damaged_path, std::nullopt};
  auto& damaged = file.db;
  try {
    damaged.emplace(damaged_path, options.vfs, options.busy_timeout_ms);
    damaged->leave_file_untouched_on_close();
    damaged->tolerate_damaged_schema();  // nothing is written through this connection
  } catch (const Error& e) {
    report.unreadable = e.what();  // nothing can be read; the file itself is kept aside
    return report;
  }
  const auto salvaged = transcript_rows::salvage_session_ids(*damaged);
  report.all_listed = salvaged.complete;
  for (const std::string& id : salvaged.ids) {
    const auto row = read_session(*damaged, id);
    if (!row) {
      report.lost.push_back(id);
      continue;
    }
    std::vector<StoredTurn> turns;
    while (static_cast<int64_t>(turns.size()) < row->n_turns) {
      auto turn = read_turn(*damaged, id, static_cast<int64_t>(turns.size()));
      if (!turn) break;  // a gap would make the rest meaningless: keep the readable prefix
      turns.push_back(std::move(*turn));
    }
    copy_session(fresh, row->session, turns);
    const bool complete = static_cast<int64_t>(turns.size()) == row->n_turns;
    (complete ? report.recovered : report.truncated).push_back(id);
  }
  return report;
}

std::string describe_recovery(const std::string& path, const RecoveryReport& report) {
  std::string line = "session store " + path + ": ";
  if (!report.unreadable.empty()) {
    line += "the damaged file cannot be read at all (" + report.unreadable +
            "): no conversation could be copied";
  } else {
    line += "recovered " + std::to_string(report.recovered.size()) + " sessions, truncated " +
            count_and_ids(report.truncated) + ", lost " + count_and_ids(report.lost);
    if (!report.all_listed) {
      line += " and perhaps more: the list of sessions cannot be read whole, so how many were "
              "lost is not known";
    }
  }
  return line + "; the damaged file is " + report.moved_aside_to;
}

}  // namespace parley::store
