// Numbers as error messages show them: "NaN" for every NaN (printf's "-nan" reads as a sign
// the caller gave), "inf", "-inf", else six significant digits ("0.3", "1e+30").
#pragma once

#include <cmath>
#include <sstream>
#include <string>

namespace parley {

inline std::string shown_float(double value) {
  if (std::isnan(value)) return "NaN";
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace parley
