// Runs the misuse matrix (misuse_matrix.h): every row must return exactly its documented
// status, never crash (the sanitizer pass runs this too), and a failing row must leave a
// message that names the function in parley_last_error(), one line of UTF-8.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "abi_fixture.h"
#include "misuse_matrix.h"

using namespace parley::test;

namespace {

// Leaves a known message in parley_last_error(), so a row that fails without setting one
// is caught.
void plant_sentinel_error(MisuseWorld& w) {
  parley_session_options o;
  parley_session_options_init(&o);
  o.chat_template = "sentinel-template";
  parley_session* s = nullptr;
  REQUIRE(parley_session_create(w.engine(), &o, &s) == PARLEY_E_INVALID_ARGUMENT);
}

}  // namespace

TEST_CASE("API misuse matrix: every misuse returns its documented status and message") {
  MisuseWorld world;
  size_t n_rows = 0;
  const std::pair<const char*, MisuseRows (*)()> groups[] = {
      {"NULL pointers", null_pointer_rows},  {"struct_size", struct_size_rows},
      {"handles", handle_rows},              {"values", value_rows},
      {"invalid UTF-8", utf8_rows},          {"re-entry from a callback", reentry_rows},
      {"two threads on one session", two_thread_rows},
  };
  for (const auto& [group, make] : groups) {
    const MisuseRows rows = make();
    const std::string group_name = group;
    for (const MisuseRow& row : rows) {
      CAPTURE(group_name);
      CAPTURE(row.function);
      CAPTURE(row.what);
      plant_sentinel_error(world);
      const parley_status got = row.call(world);
      CHECK_MESSAGE(got == row.expected,
                    "got " << std::string(parley_status_name(got)) << " (" << std::string(parley_last_error())
                           << "), expected " << std::string(parley_status_name(row.expected)));
      if (row.expected != PARLEY_OK && row.sets_last_error) {
        const std::string message = parley_last_error();
        CHECK_MESSAGE(message.find("sentinel-template") == std::string::npos,
                      "parley_last_error() was not set");
        CHECK_MESSAGE(message.find(row.function) != std::string::npos,
                      "message '" << message << "' does not name " << row.function);
        CHECK_MESSAGE(is_one_line_of_utf8(message), "message '" << message << "'");
      }
      world.end_row();
    }
    MESSAGE(group_name << ": " << rows.size() << " cases");
    n_rows += rows.size();
  }
  MESSAGE("API misuse matrix: " << n_rows << " cases");
  CHECK(n_rows >= 200);
}
