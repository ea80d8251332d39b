#include <doctest/doctest.h>

#include "backend/backend.h"
#include "common/error.h"
#include "model/model_loader.h"
#include "tiny_model.h"

namespace parley::test {

TEST_CASE("make_backend: cpu for auto/cpu/empty, unsupported for cuda, invalid otherwise") {
  model::LoadedModel model;
  TinyModel tiny = make_tiny_model(TinySpec{});
  model.config = tiny.config;
  model.weights = std::move(tiny.weights);

  for (const char* device : {"auto", "cpu", ""}) {
    const auto b = backend::make_backend(device, model, 1);
    REQUIRE(b != nullptr);
    CHECK(b->name() == "cpu");
    CHECK(b->max_batch() >= 1);
  }
  for (const char* device : {"cuda", "cuda:0", "cuda:12"}) {
    try {
      backend::make_backend(device, model, 1);
      FAIL("expected an error for " << device);
    } catch (const Error& e) {
      CHECK(e.status() == Status::unsupported);
    }
  }
  for (const char* device : {"tpu", "CPU", "cuda:", "cuda:x", "cuda0", "cpu:0"}) {
    try {
      backend::make_backend(device, model, 1);
      FAIL("expected an error for " << device);
    } catch (const Error& e) {
      CHECK(e.status() == Status::invalid_argument);
      CHECK(std::string(e.what()).find(device) != std::string::npos);
    }
  }
}

}  // namespace parley::test
