// Letting go of a model's weight bytes: buffers the weights own are freed, a file's pages
// leave the process, and every view of released bytes is emptied.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/mapped_file.h"
#include "model/model_loader.h"
#include "model/safetensors_reader.h"
#include "model/weight_release.h"
#include "support/safetensors_builder.h"
#include "support/process_memory.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

namespace parley::test {
namespace {

// A view of `n_bytes` F16 bytes at `data` (2 bytes per value, one row).
model::TensorView f16_view(const std::string& name, const std::byte* data, size_t n_bytes) {
  model::TensorView v;
  v.name = name;
  v.dtype = model::DType::f16;
  v.rows = 1;
  v.cols = int64_t(n_bytes / 2);
  v.data = data;
  v.n_bytes = n_bytes;
  return v;
}

// A buffer of n_bytes the model's weights own; its start.
const std::byte* own(model::LoadedModel& m, size_t n_bytes) {
  m.weights.owned.emplace_back(n_bytes);
  return m.weights.owned.back().data();
}

// `bytes` random bytes written to a file under dir and mapped.
std::shared_ptr<model::MappedFile> random_file(const TempDir& dir, size_t bytes,
                                               uint32_t seed) {
  std::vector<char> content(bytes);
  std::mt19937 rng(seed);
  for (char& c : content) c = char(rng());
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    out.write(content.data(), std::streamsize(bytes));
  }
  return std::make_shared<model::MappedFile>((dir / "weights.bin").string());
}

// A byte of every 512 of the view, summed: touches every page.
uint64_t sample_sum(const std::byte* data, size_t bytes) {
  uint64_t s = 0;
  for (size_t i = 0; i < bytes; i += 512) s += uint8_t(data[i]);
  return s;
}

struct PageCount {
  size_t all = 0, present = 0;
};

// The whole pages in [begin, begin + n) and how many of them this process has mapped
// (/proc/self/pagemap: bit 63 of each page's entry).
PageCount mapped_pages(const std::byte* begin, size_t n) {
  const auto page = size_t(sysconf(_SC_PAGESIZE));
  const size_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page;
  const size_t end = (reinterpret_cast<uintptr_t>(begin) + n) / page;
  // Read with pread: the file answers whole 8-byte entries only, which a buffered stream
  // does not ask for.
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  REQUIRE(fd >= 0);
  PageCount count;
  for (size_t p = first; p < end; ++p) {
    uint64_t entry = 0;
    const bool read_whole = pread(fd, &entry, 8, off_t(p * 8)) == 8;
    CHECK(read_whole);
    ++count.all;
    count.present += entry >> 63;
  }
  close(fd);
  return count;
}

}  // namespace

TEST_CASE("drop_file_pages: a view's pages leave the process when they are a mapped file's") {
  TempDir dir;
  const size_t bytes = 8u << 20;
  const auto file = random_file(dir, bytes, 3);
  const model::TensorView source = f16_view("source", file->bytes().data(), bytes);
  const uint64_t expected = sample_sum(source.data, bytes);
  const size_t touched = resident_file_bytes();

  // Not among the mapped files: left alone.
  model::drop_file_pages(source, {});
  CHECK(resident_file_bytes() + (1u << 20) > touched);

  const std::vector<std::span<const std::byte>> mapped{file->bytes()};
  model::drop_file_pages(source, mapped);
  const size_t released = resident_file_bytes();
  INFO("RssFile " << touched << " -> " << released);
  CHECK(released + (6u << 20) <= touched);
  CHECK(sample_sum(source.data, bytes) == expected);  // read again from the file, not zeros
}

TEST_CASE("release_weight_bytes frees a buffer the weights own for exactly that view") {
  model::LoadedModel m;
  m.weights.layers.resize(1);
  model::LayerWeights& L = m.weights.layers[0];
  L.wq = f16_view("wq", own(m, 64), 64);
  L.wk = f16_view("wk", own(m, 32), 32);
  // Tied: two views of one buffer.
  m.weights.tok_embd = f16_view("tok_embd", own(m, 128), 128);
  m.weights.output = m.weights.tok_embd;
  // A buffer holding more than the view (one buffer behind several tensors): the view starts
  // at its first byte, yet the buffer stays.
  const std::byte* shared = own(m, 256);
  L.wv = f16_view("wv", shared, 64);
  L.wo = f16_view("wo", shared + 64, 64);
  REQUIRE(m.weights.owned.size() == 4);

  model::release_weight_bytes(m, L.wq);  // the view itself is passed, and emptied
  CHECK(L.wq.empty());
  CHECK(L.wq.rows == 1);
  CHECK(L.wq.cols == 32);  // the shape stays
  CHECK(L.wq.n_bytes == 64);
  CHECK(m.weights.owned.size() == 3);
  CHECK_FALSE(L.wk.empty());

  model::release_weight_bytes(m, m.weights.output);
  CHECK(m.weights.output.empty());
  CHECK(m.weights.tok_embd.empty());  // the same bytes
  CHECK(m.weights.owned.size() == 2);

  model::release_weight_bytes(m, L.wv);
  CHECK(L.wv.empty());
  CHECK(m.weights.owned.size() == 2);  // the buffer holds wo too
  CHECK(L.wo.data == shared + 64);

  const model::TensorView gone = L.wv;
  model::release_weight_bytes(m, gone);  // an empty view: nothing happens
  CHECK(m.weights.owned.size() == 2);
  CHECK(L.wk.data == m.weights.owned[0].data());
}

TEST_CASE("release_weight_bytes drops a mapped file's pages and empties the view") {
  TempDir dir;
  const size_t bytes = 8u << 20;
  model::LoadedModel m;
  m.files.push_back(random_file(dir, bytes, 5));
  const std::byte* start = m.files[0]->bytes().data();
  m.weights.layers.resize(1);
  m.weights.layers[0].w_up = f16_view("w_up", start, bytes);
  m.weights.owned.emplace_back(16);
  const uint64_t expected = sample_sum(start, bytes);
  const size_t touched = resident_file_bytes();

  model::release_weight_bytes(m, m.weights.layers[0].w_up);
  const size_t released = resident_file_bytes();
  INFO("RssFile " << touched << " -> " << released);
  CHECK(released + (6u << 20) <= touched);
  CHECK(m.weights.layers[0].w_up.empty());
  CHECK(m.weights.owned.size() == 1);  // an unrelated buffer stays
  CHECK(sample_sum(start, bytes) == expected);  // the mapping itself still reads the file
}

TEST_CASE("loading a Hugging Face directory leaves its rewritten q/k rows' file pages out") {
  TempDir tmp;
  write_bytes(tmp / "tok.model", "x");
  SynthSpec spec;
  spec.dim = 2048;  // q and k: 16 MiB each in F32, read whole to be rewritten
  spec.n_heads = spec.n_kv_heads = 8;
  spec.hidden_dim = 32;
  spec.n_layers = 1;
  write_hf_dir(spec, make_synth_weights(spec), tmp / "hf", tmp / "tok.model");
  const auto m = model::load_model((tmp / "hf").string());
  REQUIRE(m->files.size() == 1);
  CHECK_FALSE(m->weights.owned.empty());
  // Where q and k lie in the file, from a mapping of its own.
  std::vector<std::shared_ptr<model::MappedFile>> header_files;
  size_t rewritten = 0, present = 0;
  for (const model::SafetensorsTensor& t : model::read_safetensors_dir(tmp / "hf", header_files)) {
    if (t.name.find("q_proj") == std::string::npos && t.name.find("k_proj") == std::string::npos) {
      continue;
    }
    const size_t offset = size_t(t.data.data() - header_files[0]->bytes().data());
    const PageCount pages = mapped_pages(m->files[0]->bytes().data() + offset, t.data.size());
    rewritten += pages.all;
    present += pages.present;
  }
  INFO(present << " of the " << rewritten << " pages of q and k in the process");
  REQUIRE(rewritten >= 2 * 4000);
  // All of them without the drop. The fingerprint's samples of the neighbouring tensors map
  // some again, as a fault maps the page cache's large folios whole (511 of 8190 on Linux 6.18
  // and ext4).
  CHECK(present * 2 < rewritten);
}

TEST_CASE("weight_views lists every view once, in a fixed order") {
  model::Weights w;
  w.layers.resize(2);
  const std::vector<model::TensorView*> views = model::weight_views(w);
  REQUIRE(views.size() == 1 + 2 * 9 + 2);
  CHECK(views.front() == &w.tok_embd);
  CHECK(views[1] == &w.layers[0].attn_norm);
  CHECK(views[10] == &w.layers[1].attn_norm);
  CHECK(views[18] == &w.layers[1].w_down);
  CHECK(views[19] == &w.output_norm);
  CHECK(views.back() == &w.output);
}

}  // namespace parley::test
