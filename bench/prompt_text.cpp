#include "prompt_text.h"

#include <sstream>
#include <string_view>

namespace parley::bench {
namespace {

constexpr std::string_view kText =
    "You are a helpful assistant for a small bakery in a quiet town. You answer questions "
    "about bread, cakes, opening hours and orders. Keep every answer short, friendly and "
    "clear. When a customer asks for something the bakery does not sell, say so kindly and "
    "suggest something close to it. The bakery opens at seven in the morning and closes at "
    "six in the evening, every day except Monday. Fresh bread comes out of the oven at eight "
    "and again at noon. Cakes must be ordered two days ahead, and the shop can write a short "
    "name or greeting on top of any cake. There are gluten free loaves on Friday and "
    "Saturday only. The owner is called Anna, and her brother Tom makes the pastries. If "
    "someone asks about prices, tell them that a loaf of bread costs three coins, a small "
    "cake costs ten coins and a large cake costs twenty coins. Never make up facts that are "
    "not written here, and when you are not sure, ask the customer to call the shop.";

const std::vector<std::string>& words() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> w;
    std::istringstream in{std::string(kText)};
    for (std::string word; in >> word;) w.push_back(word);
    return w;
  }();
  return all;
}

}  // namespace

std::string text_of_tokens(const text::Tokenizer& tokenizer, size_t n_tokens, size_t offset) {
  const auto& w = words();
  std::string text;
  for (size_t i = offset; tokenizer.encode(text).size() < n_tokens; ++i) {
    if (!text.empty()) text += ' ';
    text += w[i % w.size()];
  }
  // The last word may have overshot: cut characters until the count is exact, if it gets
  // there (a cut can merge or split pieces, so the count need not fall one by one).
  for (std::string cut = text; cut.size() > 1;) {
    cut.pop_back();
    const size_t n = tokenizer.encode(cut).size();
    if (n == n_tokens) return cut;
    if (n < n_tokens) break;
  }
  return text;
}

const std::vector<std::string>& short_messages() {
  static const std::vector<std::string> messages = {
      "When do you open on Sunday?",
      "Do you have gluten free bread today?",
      "How much is a large cake?",
      "Can I order a cake for tomorrow?",
      "Who makes the pastries?",
      "Is the bread fresh at noon?",
      "Can you write a name on a cake?",
      "Are you open on Monday?",
      "What time does the bread come out?",
      "How much does a loaf cost?",
      "Do you sell coffee?",
      "Can I call the shop?",
  };
  return messages;
}

}  // namespace parley::bench
