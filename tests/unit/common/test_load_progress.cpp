// LoadProgress: stages share the range from 0 to 1 as they are given; reports grow and are
// never repeated; only finish() reports 1; a false from the caller is Error(cancelled).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/load_progress.h"
#include "support/error_check.h"

namespace parley {
namespace {

struct Recorder {
  std::vector<float> seen;
  size_t stop_at = SIZE_MAX;
  LoadProgress progress() {
    return LoadProgress([this](float f) {
      seen.push_back(f);
      return seen.size() - 1 != stop_at;
    });
  }
};

TEST_CASE("load progress: two stages split the range, each by its own units") {
  Recorder r;
  LoadProgress p = r.progress();
  p.start();
  p.begin_stage(4, 0.25);  // four units up to a quarter
  p.advance(1);
  p.advance(3);
  p.begin_stage(10, 1.0);  // ten units up to the end
  p.advance(5);
  p.advance(5);  // the end: just below 1, which only finish() says
  p.finish();
  const std::vector<float> want = {0.0f, 0.0625f, 0.25f, 0.625f, std::nextafter(1.0f, 0.0f),
                                   1.0f};
  CHECK(r.seen == want);
}

TEST_CASE("load progress: no report repeats or goes back; units past a stage's total count as it") {
  Recorder r;
  LoadProgress p = r.progress();
  p.start();
  p.start();              // 0 again: not repeated
  p.begin_stage(0, 0.5);  // an empty stage jumps to its end
  p.begin_stage(2, 0.4);  // an end behind the current fraction stays where it is
  p.advance(5);
  p.begin_stage(2, 0.75);
  p.advance(0);
  p.advance(1);
  p.advance(7);
  p.finish();
  p.finish();  // once
  p.advance(1);
  CHECK(r.seen == std::vector<float>{0.0f, 0.5f, 0.625f, 0.75f, 1.0f});
}

TEST_CASE("load progress: reach() counts the units done in all, never going back") {
  Recorder r;
  LoadProgress p = r.progress();
  p.start();
  p.begin_stage(8, 1.0);
  p.reach(2);
  p.reach(1);  // a count begun anew (a backend given up for another) waits to pass it
  p.reach(2);
  p.reach(4);
  p.advance(2);
  p.reach(100);
  CHECK(r.seen == std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f, std::nextafter(1.0f, 0.0f)});
}

TEST_CASE("load progress: a caller's false stops with Error(cancelled), also at 1") {
  for (size_t stop_at : {0u, 1u, 2u}) {
    Recorder r;
    r.stop_at = stop_at;
    LoadProgress p = r.progress();
    CAPTURE(stop_at);
    try {
      p.start();
      p.begin_stage(1, 0.5);
      p.advance(1);
      p.finish();
      FAIL("not stopped");
    } catch (const Error& e) {
      CHECK(e.status() == Status::cancelled);
      CHECK(std::string(e.what()).find("progress callback asked to stop") != std::string::npos);
    }
    CHECK(r.seen.size() == stop_at + 1);
  }
}

TEST_CASE("load progress: without a caller nothing is reported and nothing stops") {
  LoadProgress p;
  p.start();
  p.begin_stage(3, 1.0);
  p.advance(2);
  CHECK(p.fraction() == doctest::Approx(2.0 / 3.0));
  p.finish();
  CHECK(p.fraction() == 1.0);
}

}  // namespace
}  // namespace parley
