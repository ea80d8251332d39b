// Command arguments of several parts: "A | B | C".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace chat {

// The parts of `arg` between '|', blanks around each dropped; one part when there is no '|'.
std::vector<std::string> split_bars(std::string_view arg);

}  // namespace chat
