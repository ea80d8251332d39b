// Soak: 64 conversations of 50 turns (25 under a sanitizer), round robin, under a KV budget
// that holds only a few of them, so nearly every turn spills another session and restores its
// own. Checked: most sessions really went through the store; resident memory stays within the
// budget plus a fixed overhead; the WAL stays bounded while checkpoints move the data into the
// file; every transcript is byte-identical to the same turns replayed without any budget
// pressure.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hardening_model.h"
#include "parley.h"
#include "support/process_memory.h"
#include "replay.h"
#include "support/sanitizer_build.h"
#include "support/shared_assets.h"

using namespace parley::test;

namespace {

constexpr int kSessions = 64;
// Under a sanitizer (unoptimized, instrumented) the conversations are half as long, so the
// pass takes minutes, not tens of minutes; the budget below still forces the same spilling.
constexpr int kTurns = kSanitizerBuild ? 25 : 50;
constexpr uint32_t kReplyTokens = 4;
// A conversation ends near 50 x 8 tokens = 25 blocks (900 KiB); 64 of them need about 56 MiB.
// The budget holds about 4 of them.
constexpr uint64_t kBudget = 4u << 20;
// Resident memory beyond the budget, whatever the number of sessions and turns: SQLite's page
// cache (up to 2,000 KiB by default), the model (1.7 MiB of F32 weights, mapped and paged in
// as they compute), zstd's contexts, the buffers of one spill or restore, 64 transcripts, and
// allocator slack. Measured on Linux/glibc: about 10 MiB. Spilled KV kept resident would add
// up to the 56 MiB of all conversations.
constexpr uint64_t kOverhead = 16u << 20;
// SQLite checkpoints when the WAL reaches 1,000 pages (its default; the store's pages are
// 16 KiB) and then starts it over. One transaction adds at most a session's KV (under 1 MiB)
// past that point, so 20 MiB bounds the file; without checkpoints it would grow with each of
// the run's thousands of commits.
constexpr uint64_t kWalBound = 20u << 20;

std::string turn_text(int session, int turn) {
  static const char* words[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"};
  // The first turn names the session, so no two conversations share a KV block.
  if (turn == 0) return std::string(words[session % 13]) + " " + words[session / 13] + " m m";
  return std::string(words[turn % 13]) + " " + words[(turn * 7 + session) % 13];
}

uint64_t size_or_zero(const std::filesystem::path& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : uint64_t(n);
}

}  // namespace

TEST_CASE("soak: 64 sessions x 50 turns under a small KV budget") {
  TempDir dir;
  const std::string db = (dir / "soak.db").string();
  const std::string& model = hardening_model();
  const auto eo = engine_options(model, db, kBudget);
  parley_engine* e = nullptr;
  REQUIRE(parley_engine_open(&eo, &e) == PARLEY_OK);
  std::vector<parley_session*> sessions(kSessions, nullptr);
  for (int i = 0; i < kSessions; ++i) {
    parley_session_options so;
    parley_session_options_init(&so);
    so.chat_template = "raw";
    REQUIRE(parley_session_create(e, &so, &sessions[size_t(i)]) == PARLEY_OK);
  }
  const uint64_t db_start = size_or_zero(db);
  release_free_heap();
  const uint64_t rss_start = resident_bytes();
  const bool peak_reset = reset_peak_resident();
  uint64_t rss_sampled_max = rss_start, wal_max = 0;

  std::vector<int> restored(kSessions, 0);
  const auto g = greedy_options(kReplyTokens);
  for (int turn = 0; turn < kTurns; ++turn) {
    for (int i = 0; i < kSessions; ++i) {
      parley_turn_stats stats;
      stats.struct_size = sizeof stats;
      const std::string text = turn_text(i, turn);
      const parley_status st = parley_session_send(sessions[size_t(i)], text.c_str(), &g, nullptr, nullptr, &stats);
      REQUIRE_MESSAGE(st == PARLEY_OK, std::string(parley_last_error()));
      restored[size_t(i)] += stats.kv_source == PARLEY_KV_SOURCE_RESTORED;
      wal_max = std::max(wal_max, size_or_zero(db + "-wal"));
      rss_sampled_max = std::max(rss_sampled_max, resident_bytes());
    }
  }
  const uint64_t rss_peak = peak_reset ? std::max(rss_sampled_max, peak_resident_bytes()) : rss_sampled_max;

  parley_engine_stats st;
  st.struct_size = sizeof st;
  REQUIRE(parley_engine_get_stats(e, &st) == PARLEY_OK);
  int sessions_restored = 0;
  for (int n : restored) sessions_restored += n > 0;
  const double spilled_fraction = double(st.sessions_spilled) / kSessions;
  const uint64_t db_end = size_or_zero(db);
  MESSAGE("turns " << kTurns << ", spilled now " << st.sessions_spilled << "/" << kSessions
                   << ", restored at least once " << sessions_restored << "/" << kSessions
                   << "; RSS start " << (rss_start >> 10) << " KiB, peak " << (rss_peak >> 10)
                   << " KiB (+" << ((rss_peak - rss_start) >> 10) << " KiB; budget "
                   << (kBudget >> 10) << " KiB" << std::string(peak_reset ? "" : ", sampled per turn")
                   << "); WAL max " << (wal_max >> 10) << " KiB; file " << (db_start >> 10)
                   << " -> " << (db_end >> 10) << " KiB");
  CHECK(spilled_fraction >= 0.8);
  CHECK(sessions_restored >= kSessions * 8 / 10);
  if (kSanitizerBuild) {
    MESSAGE("RSS not checked: a sanitizer's shadow memory and quarantine are not the engine's");
  } else {
    CHECK(rss_peak <= rss_start + kBudget + kOverhead);
  }
  CHECK(wal_max <= kWalBound);
  // Everything committed went through the WAL, so a file larger than the WAL ever was got
  // there by checkpoints.
  CHECK(db_end > wal_max);

  // The same turns, each conversation alone, in an engine with no store and no pressure.
  const auto ro = engine_options(model, "");
  parley_engine* reference = nullptr;
  REQUIRE(parley_engine_open(&ro, &reference) == PARLEY_OK);
  for (int i = 0; i < kSessions; ++i) {
    CAPTURE(i);
    std::vector<TurnRecord> turns;
    for (int t = 0; t < kTurns; ++t) turns.push_back({turn_text(i, t), kReplyTokens, kReplyTokens, false});
    Transcript live;
    REQUIRE(read_transcript(sessions[size_t(i)], live) == PARLEY_OK);
    CHECK(live == replay(reference, turns));
    parley_session_close(sessions[size_t(i)]);
  }
  parley_engine_close(reference);
  parley_engine_close(e);
}
