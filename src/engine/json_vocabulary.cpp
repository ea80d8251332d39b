#include "engine/json_vocabulary.h"

#include <algorithm>

namespace parley::engine {

JsonVocabulary::JsonVocabulary(const text::Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  std::vector<std::string> pieces(static_cast<size_t>(n));
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer.is_control(id) || tokenizer.is_unknown(id)) continue;
    pieces[size_t(id)] = tokenizer.piece_bytes(id);
    if (!pieces[size_t(id)].empty()) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return pieces[size_t(a)] != pieces[size_t(b)] ? pieces[size_t(a)] < pieces[size_t(b)] : a < b;
  });
  entry_of_.assign(size_t(n), UINT32_MAX);
  plain_text_.assign(size_t(n), 0);
  // A token of plain text leaves a string between characters as it found it, never passing
  // through a quote: one that ends the string and starts another (`":0,"`) leaves a key
  // string as it found it too, but what it may do depends on the container it is in.
  text::JsonPrefix in_string;
  in_string.feed(std::string_view("{\""));
  std::string_view before, before_not_plain;
  for (const int32_t id : ids) {
    const std::string& piece = pieces[size_t(id)];
    const auto shared = [&](std::string_view other) {
      return uint32_t(std::mismatch(piece.begin(), piece.end(), other.begin(), other.end()).first -
                      piece.begin());
    };
    const Entry entry{uint32_t(bytes_.size()), uint32_t(piece.size()), shared(before), id};
    entry_of_[size_t(id)] = uint32_t(entries_.size());
    entries_.push_back(entry);
    text::JsonPrefix after = in_string;
    if (piece.find('"') == std::string::npos && after.feed(piece) && after == in_string) {
      plain_text_[size_t(id)] = 1;
    } else {
      not_plain_text_.push_back({entry.offset, entry.length, shared(before_not_plain), id});
      before_not_plain = piece;
    }
    bytes_ += piece;
    before = piece;
    longest_ = std::max(longest_, piece.size());
  }
}

void JsonVocabulary::allowed(const text::SchemaPrefix& state, std::span<uint8_t> allowed) const {
  // The walk copies the state at each byte: without a schema, the JSON state alone.
  if (state.schema()) {
    allowed_by(state, allowed);
  } else {
    allowed_by(state.syntax(), allowed);
  }
}

template <typename State>
void JsonVocabulary::allowed_by(const State& state, std::span<uint8_t> allowed) const {
  if (state.between_string_characters()) {
    std::copy(plain_text_.begin(), plain_text_.end(), allowed.begin());
    walk(not_plain_text_, state, allowed);
  } else {
    std::fill(allowed.begin(), allowed.end(), uint8_t{0});
    walk(entries_, state, allowed);
  }
}

template <typename State>
void JsonVocabulary::walk(const std::vector<Entry>& entries, const State& state,
                          std::span<uint8_t> allowed) const {
  // states[d]: the state after an entry's first d bytes, valid for d <= good.
  std::vector<State> states(longest_ + 1, state);
  size_t good = 0;
  bool refused = false;  // the entry before was refused at its byte `good`
  for (const Entry& e : entries) {
    // It starts with the refused byte too.
    if (refused && e.shared > good) continue;
    size_t d = std::min<size_t>(e.shared, good);
    refused = false;
    const char* b = bytes_.data() + e.offset;
    for (; d < e.length; ++d) {
      states[d + 1] = states[d];
      if (!states[d + 1].feed(static_cast<uint8_t>(b[d]))) {
        refused = true;
        break;
      }
    }
    good = d;
    if (!refused) allowed[size_t(e.id)] = 1;
  }
}

std::string_view JsonVocabulary::bytes(int32_t id) const {
  const uint32_t at = entry_of_[size_t(id)];
  if (at == UINT32_MAX) return {};
  return std::string_view(bytes_).substr(entries_[at].offset, entries_[at].length);
}

}  // namespace parley::engine
