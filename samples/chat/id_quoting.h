// Session ids as console commands read and show them. An id may hold blanks, also at its ends,
// which a command's argument loses: such an id is written in double quotes ("  my id "), in
// which \" stands for a quote and \\ for a backslash. Ids the console shows are written so.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace chat {

// The id a command argument names: the argument as it is, or, when it starts with a double
// quote, what the quotes hold. nullopt when a quoted id is not closed or text follows it.
std::optional<std::string> read_id(std::string_view arg);

// `id` as read_id reads it back: as it is, or in double quotes when it is empty, starts with a
// quote or holds a blank.
std::string shown_id(std::string_view id);

// Where a quoted id that ends `arg` and follows a blank (or starts it) begins, the leftmost
// one when several could; npos when there is none. For commands whose id is their last word.
size_t trailing_quoted_id(std::string_view arg);

// Says that `arg` is not an id read_id can read, and how quoting goes.
void print_unreadable_id(std::string_view arg);

}  // namespace chat
