// Readers for the reference outputs in ../shared/golden.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace parley::test {

struct GreedyGolden {
  std::string name;
  std::string prompt;
  std::vector<int32_t> prompt_ids;  // with BOS
  std::vector<int32_t> generated_ids;
  std::string full_text;            // DecodeIds(prompt_ids + generated_ids)
  double min_top2_margin = 0;
};

struct LogitsGolden {
  std::vector<int32_t> token_ids;
  size_t n_vocab = 0;
  std::vector<float> logits;  // [token_ids.size(), n_vocab]
  std::vector<int32_t> argmax_per_row;
};

struct TokenizeGolden {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
};

std::vector<GreedyGolden> read_greedy_goldens(const std::filesystem::path& jsonl);
// name: "once_upon", "quote_sam" or "digits" (the .json sidecar and its .f32 file).
LogitsGolden read_logits_golden(const std::filesystem::path& golden_dir, const std::string& name);
std::vector<TokenizeGolden> read_tokenize_goldens(const std::filesystem::path& jsonl);

// log softmax(logits[row])[target] in double, from a [rows, n_vocab] array such as
// LogitsGolden::logits: the log-probability a row gives a token.
double log_p(const std::vector<float>& logits, size_t n_vocab, size_t row, int32_t target);

}  // namespace parley::test
