// sentencepiece parses its model and builds its results with protobuf, which is not
// exception-safe: when an allocation throws inside it, protobuf crashes in its own destructors.
// That is a property of the library, not something Parley can handle, so the out-of-memory
// test does not fail allocations inside it: these definitions take the place of the library
// entry points the tokenizer calls, in the test binary only, and run the library's own ones
// with failures paused.
#include <dlfcn.h>
#include <sentencepiece_processor.h>

#include "failing_alloc.h"

namespace {

template <typename Fn>
Fn library_function(const char* mangled_name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, mangled_name));
}

}  // namespace

namespace sentencepiece {

util::Status SentencePieceProcessor::LoadFromSerializedProto(absl::string_view serialized) {
  using Fn = util::Status (*)(SentencePieceProcessor*, absl::string_view);
  static const auto library = library_function<Fn>(
      "_ZN13sentencepiece22SentencePieceProcessor23LoadFromSerializedProtoESt17basic_string_"
      "viewIcSt11char_traitsIcEE");
  parley::test::PauseAllocationFailures pause;
  return library(this, serialized);
}

util::Status SentencePieceProcessor::Encode(absl::string_view input, std::vector<int>* ids) const {
  using Fn = util::Status (*)(const SentencePieceProcessor*, absl::string_view, std::vector<int>*);
  static const auto library = library_function<Fn>(
      "_ZNK13sentencepiece22SentencePieceProcessor6EncodeESt17basic_string_viewIcSt11char_"
      "traitsIcEEPSt6vectorIiSaIiEE");
  parley::test::PauseAllocationFailures pause;
  return library(this, input, ids);
}

util::Status SentencePieceProcessor::Decode(const std::vector<int>& ids, std::string* text) const {
  using Fn = util::Status (*)(const SentencePieceProcessor*, const std::vector<int>&, std::string*);
  static const auto library = library_function<Fn>(
      "_ZNK13sentencepiece22SentencePieceProcessor6DecodeERKSt6vectorIiSaIiEEPNSt7__cxx1112basic_"
      "stringIcSt11char_traitsIcESaIcEEE");
  parley::test::PauseAllocationFailures pause;
  return library(this, ids, text);
}

}  // namespace sentencepiece
