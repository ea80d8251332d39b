#include "common/load_progress.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/error.h"

namespace parley {

LoadProgress::LoadProgress(Report report) : report_(std::move(report)) {}

void LoadProgress::start() { report(0); }

void LoadProgress::begin_stage(uint64_t total_units, double end_fraction) {
  stage_start_ = fraction_;
  stage_end_ = std::clamp(end_fraction, fraction_, 1.0);
  stage_total_ = total_units;
  stage_done_ = 0;
  if (total_units == 0) {
    fraction_ = stage_end_;
    report(fraction_);
  }
}

void LoadProgress::advance(uint64_t units) { reach(stage_done_ + units); }

void LoadProgress::reach(uint64_t units_done) {
  if (stage_total_ == 0 || units_done <= stage_done_) return;
  stage_done_ = std::min(stage_total_, units_done);
  const double share = double(stage_done_) / double(stage_total_);
  fraction_ = std::max(fraction_, stage_start_ + (stage_end_ - stage_start_) * share);
  report(fraction_);
}

void LoadProgress::finish() {
  if (finished_) return;
  finished_ = true;
  fraction_ = 1;
  if (!report_) return;
  if (!report_(1.0f)) fail(Status::cancelled, "the load progress callback asked to stop");
}

void LoadProgress::report(double fraction) {
  if (!report_ || finished_) return;
  // 1 means ready, which only finish() says; a float just below it stands for "almost".
  const float shown = std::min(float(fraction), std::nextafter(1.0f, 0.0f));
  if (shown <= last_reported_) return;
  last_reported_ = shown;
  if (!report_(shown)) fail(Status::cancelled, "the load progress callback asked to stop");
}

}  // namespace parley
