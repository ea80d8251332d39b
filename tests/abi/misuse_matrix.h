// The API misuse matrix: one row per misuse of a parley_* function, each with the status
// parley.h documents for it. Rows are plain data built by the misuse_*.cpp files and run by
// test_misuse_matrix.cpp, which also checks that every failing row leaves a message naming
// the function in parley_last_error().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parley.h"

namespace parley::test {

// A conversation parley_session_import() takes on any model: texts only, one exchange, no id.
inline constexpr const char* kTextsOnlyConversation =
    R"({"format": "parley-conversation", "version": 1, "chat_template": "raw", "messages": [)"
    R"({"role": "user", "text": "a"}, {"role": "assistant", "text": " b"}]})";

// A status no parley_* function returns: a row's own check of a void or string result failed.
inline constexpr parley_status kRowCheckFailed = -1000;

// What a row may use. Handles made by a row are closed after it.
class MisuseWorld {
 public:
  MisuseWorld();
  ~MisuseWorld();
  parley_engine* engine();             // shared, in-memory (no store)
  parley_engine* engine_with_store();  // a fresh one with a store in a temp dir
  parley_session* session();           // a fresh session of engine(), raw template
  parley_session* session_with_turn(); // the same after one short turn
  const std::string& model() const;
  const std::string& temp_path(const std::string& name);
  void end_row();  // closes what the row made

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct MisuseRow {
  std::string function;  // the parley_* function misused; the message must name it
  std::string what;
  parley_status expected;
  std::function<parley_status(MisuseWorld&)> call;
  // false where there is no status (void and string functions) or the message is another
  // thread's (the row checks it on that thread)
  bool sets_last_error = true;
};

using MisuseRows = std::vector<MisuseRow>;

// Helpers for the rows.
parley_generate_options quick_generate();  // greedy, 2 tokens, ignore_eos
parley_status send_text(parley_session* s, const char* text);

MisuseRows null_pointer_rows();
MisuseRows struct_size_rows();
MisuseRows handle_rows();       // closed, double-closed, foreign and forged handles
MisuseRows value_rows();        // out-of-range enums and numbers, huge lengths
MisuseRows utf8_rows();         // invalid UTF-8 in every text input
MisuseRows reentry_rows();      // calls from inside the session's own callback
MisuseRows two_thread_rows();   // a second thread on a session while a send runs

}  // namespace parley::test
