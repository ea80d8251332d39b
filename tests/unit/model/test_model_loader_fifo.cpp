// A FIFO where a model file should be is refused at once: opening one for reading would wait
// for a writer that never comes.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include "model/model_loader.h"
#include "support/error_check.h"
#include "support/safetensors_builder.h"
#include "support/shared_assets.h"
#include "support/synth_model.h"

using parley::Status;
using parley::model::load_model;
namespace fs = std::filesystem;

namespace {

using LoadError = std::pair<Status, std::string>;

// load_model(path)'s error, or "hung" when it has not returned within a few seconds. A load
// blocked on the FIFO is then released by opening its writing end, so that the test ends.
LoadError load_error_within_seconds(const fs::path& path, const fs::path& fifo) {
  auto load = std::async(std::launch::async, [&] {
    return parley::test::error_of([&] { (void)load_model(path.string()); });
  });
  if (load.wait_for(std::chrono::seconds(5)) == std::future_status::ready) return load.get();
  while (load.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }
  load.get();
  return {Status::ok, "hung"};
}

void make_fifo(const fs::path& path) {
  fs::remove(path);
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
}

}  // namespace

TEST_CASE("loader: a FIFO as the GGUF file is refused at once") {
  parley::test::TempDir tmp;
  make_fifo(tmp / "f.gguf");
  const auto [status, message] = load_error_within_seconds(tmp / "f.gguf", tmp / "f.gguf");
  INFO("message: ", message);
  CHECK(status == Status::io);
  CHECK(message.find("is not a regular file") != std::string::npos);
}

TEST_CASE("loader: a FIFO in place of any file of a Hugging Face directory is refused at once") {
  parley::test::TempDir tmp;
  parley::test::SynthSpec spec;
  const auto weights = parley::test::make_synth_weights(spec);
  parley::test::write_bytes(tmp / "tok.model", "x");
  for (const std::string file : {"model.safetensors", "config.json", "tokenizer_config.json",
                                 "tokenizer.model", "model.safetensors.index.json"}) {
    CAPTURE(file);
    const auto dir = tmp / file;  // a directory per case, named after the file replaced
    const bool sharded = file == "model.safetensors.index.json";
    parley::test::write_hf_dir(spec, weights, dir, tmp / "tok.model",
                               {.n_shards = sharded ? 2 : 1});
    REQUIRE_NOTHROW(load_model(dir.string()));
    make_fifo(dir / file);
    const auto [status, message] = load_error_within_seconds(dir, dir / file);
    INFO("message: ", message);
    CHECK(status == Status::io);
    CHECK(message.find("is not a regular file") != std::string::npos);
  }
}
