#include "golden.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/shared_assets.h"

namespace parley::test {
namespace {

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

}  // namespace

std::vector<GreedyGolden> read_greedy_goldens(const std::filesystem::path& jsonl) {
  std::vector<GreedyGolden> out;
  for (const auto& j : read_jsonl(jsonl)) {
    GreedyGolden g;
    g.name = j.at("name");
    g.prompt = j.at("prompt");
    g.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    g.generated_ids = j.at("generated_ids").get<std::vector<int32_t>>();
    g.full_text = j.at("full_text");
    g.min_top2_margin = j.at("min_top2_margin");
    out.push_back(std::move(g));
  }
  return out;
}

LogitsGolden read_logits_golden(const std::filesystem::path& dir, const std::string& name) {
  const auto meta = nlohmann::json::parse(read_file(dir / ("stories260k_logits_" + name + ".json")));
  LogitsGolden g;
  g.token_ids = meta.at("token_ids").get<std::vector<int32_t>>();
  g.argmax_per_row = meta.at("argmax_per_row").get<std::vector<int32_t>>();
  const auto shape = meta.at("shape").get<std::vector<size_t>>();
  if (shape.size() != 2 || shape[0] != g.token_ids.size()) {
    throw std::runtime_error("unexpected logits shape in " + name);
  }
  g.n_vocab = shape[1];
  const std::string raw = read_file(dir / meta.at("file").get<std::string>());
  if (raw.size() != shape[0] * shape[1] * sizeof(float)) {
    throw std::runtime_error("logits file size does not match its shape: " + name);
  }
  g.logits.resize(shape[0] * shape[1]);
  std::memcpy(g.logits.data(), raw.data(), raw.size());  // little-endian, as on x86-64
  return g;
}

std::vector<TokenizeGolden> read_tokenize_goldens(const std::filesystem::path& jsonl) {
  std::vector<TokenizeGolden> out;
  for (const auto& j : read_jsonl(jsonl)) {
    out.push_back({j.at("text"), j.at("ids").get<std::vector<int32_t>>(), j.at("decoded")});
  }
  return out;
}

double log_p(const std::vector<float>& logits, size_t n_vocab, size_t row, int32_t target) {
  const auto first = logits.begin() + std::ptrdiff_t(row * n_vocab);
  const float top = *std::max_element(first, first + std::ptrdiff_t(n_vocab));
  double sum = 0;
  for (size_t v = 0; v < n_vocab; ++v) sum += std::exp(double(first[std::ptrdiff_t(v)]) - top);
  return double(first[target]) - top - std::log(sum);
}

}  // namespace parley::test
