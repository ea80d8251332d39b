// Order statistics and means of timings.
#pragma once

#include <vector>

namespace parley::bench {

// The q-quantile (0..1) with linear interpolation between order statistics (numpy's
// default); 0 for an empty list.
double quantile(std::vector<double> values, double q);
inline double median(const std::vector<double>& values) { return quantile(values, 0.5); }

// 0 for an empty list.
double mean(const std::vector<double>& values);

}  // namespace parley::bench
