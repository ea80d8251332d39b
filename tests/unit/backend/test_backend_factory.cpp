#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "backend/cuda_loader.h"
#include "common/error.h"
#include "model/model_loader.h"
#include "tiny_model.h"

namespace parley::test {

TEST_CASE("make_backend: cpu for cpu, invalid for unknown devices") {
  model::LoadedModel model;
  TinyModel tiny = make_tiny_model(TinySpec{});
  model.config = tiny.config;
  model.weights = std::move(tiny.weights);

  const auto b = backend::make_backend("cpu", model, 1);
  REQUIRE(b != nullptr);
  CHECK(b->name() == "cpu");
  CHECK(b->max_batch() >= 1);
  for (const char* device : {"tpu", "CPU", "cuda:", "cuda:x", "cuda0", "cpu:0", "cuda:99999999999",
                             "cuda:-1", "cuda:+1", "cuda: 1", "cuda:1 ", "cuda:0x1"}) {
    try {
      backend::make_backend(device, model, 1);
      FAIL("expected an error for " << device);
    } catch (const Error& e) {
      CHECK(e.status() == Status::invalid_argument);
      CHECK(std::string(e.what()).find(device) != std::string::npos);
    }
  }
}

TEST_CASE("parse_device reads auto, cpu, cuda and cuda:N, and nothing else") {
  using Kind = backend::DeviceName::Kind;
  const auto is = [](const char* device, Kind kind, int32_t index) {
    const backend::DeviceName name = backend::parse_device(device);
    return name.kind == kind && name.index == index;
  };
  CHECK(is("", Kind::automatic, 0));
  CHECK(is("auto", Kind::automatic, 0));
  CHECK(is("cpu", Kind::cpu, 0));
  CHECK(is("cuda", Kind::cuda, 0));
  CHECK(is("cuda:0", Kind::cuda, 0));
  CHECK(is("cuda:3", Kind::cuda, 3));
  CHECK(is("cuda:007", Kind::cuda, 7));
  CHECK(is("cuda:2147483647", Kind::cuda, INT32_MAX));
  try {
    backend::parse_device("cuda:2147483648");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    CHECK(std::string(e.what()).find("too large") != std::string::npos);
  }
}

TEST_CASE("make_backend: auto is cpu without a CUDA device; cuda without one is a backend error") {
  model::LoadedModel model;
  TinyModel tiny = make_tiny_model(TinySpec{});
  model.config = tiny.config;
  model.weights = std::move(tiny.weights);
  // On a machine with a GPU and the module, tests/gpu covers the other side.
  if (backend::cuda_device_count() > 0) {
    MESSAGE("skipped: a CUDA device is visible here");
    return;
  }
  for (const char* device : {"auto", ""}) {
    const auto b = backend::make_backend(device, model, 1);
    REQUIRE(b != nullptr);
    CHECK(b->name() == "cpu");
  }
  for (const char* device : {"cuda", "cuda:0", "cuda:12"}) {
    try {
      backend::make_backend(device, model, 1);
      FAIL("expected an error for " << device);
    } catch (const Error& e) {
      CHECK(e.status() == Status::backend);
      CHECK(std::string(e.what()).find(device) != std::string::npos);
    }
  }
}

}  // namespace parley::test
