// The decode figures of a line, from the gaps between generated tokens.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace parley::bench {

// tpot_ms_median, tpot_ms_p90, tpot_ms_mean, tpot_samples and decode_tok_s (generated tokens
// per second of decoding: 1000 / the mean gap). Leaves them null when there is no gap.
// Returns decode tok/s (0 when there is no gap).
double put_decode_timings(nlohmann::ordered_json& line, const std::vector<double>& tpot_ms);

}  // namespace parley::bench
