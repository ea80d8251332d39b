// Reports how far an engine's opening has come, as a fraction from 0 to 1, to a caller that
// may ask to stop it. The work comes in stages (converting weights, the backend taking them),
// each given its share of the range before it starts; within a stage, progress is counted in
// that stage's own units (bytes).
#pragma once

#include <cstdint>
#include <functional>

namespace parley {

class LoadProgress {
 public:
  // Returns false to stop the opening.
  using Report = std::function<bool(float fraction)>;

  LoadProgress() = default;  // reports nothing, never stops
  explicit LoadProgress(Report report);

  // Reports 0. Throws Error(cancelled) when the caller asks to stop.
  void start();
  // The next stage: `total_units` units take the range from where progress is now up to
  // `end_fraction` (clamped to [now, 1]). A stage of 0 units jumps to its end at once.
  void begin_stage(uint64_t total_units, double end_fraction);
  // `units` more of the current stage done; reports the new fraction when it moved (values
  // below 1 only: 1 is finish()'s). Throws Error(cancelled) when the caller asks to stop.
  void advance(uint64_t units);
  // As advance(), given the units done in all; a count below the stage's so far changes
  // nothing.
  void reach(uint64_t units_done);
  // Reports 1, once. Throws Error(cancelled) when the caller asks to stop.
  void finish();

  double fraction() const { return fraction_; }

 private:
  void report(double fraction);

  Report report_;
  double fraction_ = 0;        // the last value reached
  double stage_start_ = 0;
  double stage_end_ = 0;
  uint64_t stage_total_ = 0;
  uint64_t stage_done_ = 0;
  float last_reported_ = -1;   // what the caller last saw, so that equal values are not repeated
  bool finished_ = false;
};

}  // namespace parley
