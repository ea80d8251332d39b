// Appending to a short list that must not hold a value twice (a linear search).
#pragma once

#include <algorithm>
#include <vector>

namespace parley {

template <class T>
void add_unique(std::vector<T>& values, const T& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

}  // namespace parley
