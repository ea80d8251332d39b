#include "synthetic_vocab.h"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace parley::bench {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, sentencepiece's space

enum PieceType : int32_t { normal = 1, unknown = 2, control = 3, byte = 6 };

}  // namespace

model::GgufVocab make_synthetic_vocab(int32_t n_vocab) {
  if (n_vocab < 259) throw std::invalid_argument("a synthetic vocabulary needs >= 259 pieces");
  model::GgufVocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {unknown, control, control};
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.tokens.emplace_back(buf);
    v.token_types.push_back(byte);
  }

  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& piece) {
    if (int32_t(v.tokens.size()) >= n_vocab || !seen.insert(piece).second) return;
    v.tokens.push_back(piece);
    v.token_types.push_back(normal);
  };
  const std::string lower = "abcdefghijklmnopqrstuvwxyz";
  const std::string singles = lower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'-:;\"()";
  add(std::string(kWordStart));
  for (char c : singles) add(std::string(1, c));
  for (char c : lower) add(std::string(kWordStart) + c);
  // Longer pieces, shortest first: each is a shorter piece plus a letter, so BPE reaches it.
  std::vector<std::string> level(1, "");
  while (int32_t(v.tokens.size()) < n_vocab) {
    std::vector<std::string> next;
    for (const std::string& prefix : level) {
      for (char c : lower) next.push_back(prefix + c);
    }
    for (const std::string& p : next) {
      if (p.size() > 1) add(p);
    }
    for (const std::string& p : next) {
      if (p.size() > 1) add(std::string(kWordStart) + p);
    }
    level = std::move(next);
  }

  // Earlier pieces score higher: sentencepiece's BPE merges by score.
  v.scores.assign(v.tokens.size(), 0.0f);
  for (size_t i = 259; i < v.scores.size(); ++i) v.scores[i] = -float(i - 259);
  v.add_space_prefix = true;
  v.remove_extra_whitespaces = false;
  return v;
}

}  // namespace parley::bench
