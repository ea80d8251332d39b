// parley-chat's command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parley.h"

namespace chat {

struct CliArgs {
  std::string model;
  std::optional<std::string> prompt;  // set: one-shot mode
  std::optional<std::string> system_prompt;
  std::optional<std::string> chat_template;
  std::optional<std::string> store_path;  // set: conversations persist in this SQLite file
  std::optional<std::string> session_id;  // the conversation to continue (store) or to name
  uint32_t idle_spill_ms = 0;
  std::string device = "auto";
  int32_t n_threads = 0;
  int32_t kv_type = PARLEY_KV_DEFAULT;
  uint32_t context_length = 0;
  int32_t overflow = PARLEY_OVERFLOW_ERROR;  // of the conversations this run starts
  bool overflow_given = false;  // --overflow: also for the stored conversations it opens
  parley_generate_options gen{};  // without the texts below: GenerateOptions
  std::vector<std::string> stop_strings;  // --stop, in order
  std::optional<std::string> reply_prefix;
  std::vector<parley_logit_bias> logit_bias;  // --logit-bias
  std::optional<std::string> json_schema;     // --json-schema: the file's text
  bool format_given = false;                  // --format
  bool print_ids = false;
  bool help = false;
  bool version = false;
};

// args.gen with args.stop_strings, reply_prefix, logit_bias and json_schema: valid while
// args lives unchanged.
class GenerateOptions {
 public:
  explicit GenerateOptions(const CliArgs& args);
  GenerateOptions(const GenerateOptions&) = delete;
  GenerateOptions& operator=(const GenerateOptions&) = delete;
  const parley_generate_options* get() const { return &options_; }

 private:
  std::vector<const char*> stop_;
  parley_generate_options options_;
};

// Throws std::invalid_argument with a message naming the flag.
CliArgs parse_args(int argc, char** argv);

// What is wrong with the --logit-bias flags for a vocabulary of n_vocab tokens (a token past
// it, every token banned), which parse_args cannot know; nullopt when nothing is.
std::optional<std::string> logit_bias_problem(const CliArgs& args, uint32_t n_vocab);

const char* usage();

}  // namespace chat
