#include "decode_timing_fields.h"

#include "summary_stats.h"

namespace parley::bench {

double put_decode_timings(nlohmann::ordered_json& line, const std::vector<double>& tpot_ms) {
  const double mean_ms = mean(tpot_ms);
  if (tpot_ms.empty() || mean_ms <= 0) return 0;
  const double tok_s = 1000.0 / mean_ms;
  line["decode_tok_s"] = tok_s;
  line["tpot_ms_median"] = median(tpot_ms);
  line["tpot_ms_p90"] = quantile(tpot_ms, 0.9);
  line["tpot_ms_mean"] = mean_ms;
  line["tpot_samples"] = tpot_ms.size();
  return tok_s;
}

}  // namespace parley::bench
