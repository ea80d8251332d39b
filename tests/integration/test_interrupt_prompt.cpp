// interrupt() during a prompt longer than one prefill chunk stops the send between chunks:
// it returns CANCELLED before the whole prompt is computed, keeps the message with an empty
// reply, and the next turn computes the rest and goes on exactly as a conversation whose
// reply to that message was rewound. A written exchange's KV stops as well, the exchange
// kept. An interrupt no call saw is forgotten by the next caller; a closing session's holds
// for a call still on its way.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "common/error.h"
#include "session_fixture.h"
#include "support/shared_assets.h"

using namespace parley;
using namespace parley::test;

namespace {

// A message over two prefill chunks of the long-context model.
std::string long_message() {
  std::string message;
  for (int i = 0; i < 360; ++i) message += "a b c ";
  return message;
}

// The next turn of a session whose prompt was stopped computes the rest and goes on as the
// one that computed it all: the same ids and the same logits.
void check_next_turn_catches_up(engine::Session& stopped, engine::Session& whole) {
  const auto a = greedy_turn(stopped, "c d", 8);
  const auto b = greedy_turn(whole, "c d", 8);
  CHECK(a.computed_tokens > b.computed_tokens);  // the rest of the stopped prompt
  CHECK(stopped.tokens() == whole.tokens());
  const auto la = stopped.last_logits();
  const auto lb = whole.last_logits();
  CHECK(std::equal(la.begin(), la.end(), lb.begin(), lb.end()));
}

}  // namespace

TEST_CASE("interrupt() stops a long prompt between chunks; the message keeps an empty reply") {
  auto engine = open_long_context_engine();
  // Scopes of their own: neither finds the other's prompt in the prefix cache.
  engine::Session stopped(engine, session_options("", "raw", "stopped"));
  engine::Session rewound(engine, session_options("", "raw", "rewound"));
  const std::string message = long_message();
  const auto [status, stats] = send_stopped_beside_rewound(stopped, rewound, message);

  CHECK(status == Status::cancelled);
  REQUIRE(stats.prompt_tokens > 2 * 512);
  CHECK(stats.computed_tokens < stats.prompt_tokens);  // not the whole prompt
  CHECK(stats.generated_tokens == 0);
  REQUIRE(stopped.messages().size() == 2);
  CHECK(stopped.messages()[1].role == engine::Role::assistant);
  CHECK(stopped.messages()[1].text.empty());
  CHECK(stopped.tokens() == rewound.tokens());

  check_next_turn_catches_up(stopped, rewound);
  REQUIRE(stopped.messages().size() == rewound.messages().size());
  for (size_t i = 0; i < stopped.messages().size(); ++i) {
    CAPTURE(i);
    CHECK(stopped.messages()[i].role == rewound.messages()[i].role);
    CHECK(stopped.messages()[i].text == rewound.messages()[i].text);
  }
}

TEST_CASE("an interrupt while no call runs is forgotten; a closing session's is not") {
  PARLEY_SHARED_OR_SKIP(gguf, "models/stories260k/stories260k-f32.gguf");
  auto engine = open_engine(gguf.string(), kv::KvType::f32);
  engine::GenerateParams params;
  params.sampler.temperature = 0;
  params.max_tokens = 6;
  params.ignore_eos = true;
  engine::TurnStats stats;

  engine::Session idle(engine, session_options());
  idle.interrupt();  // nothing runs: a no-op
  {
    const auto use = idle.try_use();
    REQUIRE(use);
    idle.send("Once upon a time", params, nullptr, stats);
  }
  CHECK(stats.generated_tokens == 6);

  // Closing interrupts whatever call holds the session or is about to take it; a send that
  // takes the session after that stops before it computes anything, and so does the next.
  engine::Session closing(engine, session_options());
  closing.interrupt_for_good();
  for (int call = 0; call < 2; ++call) {
    CAPTURE(call);
    const auto use = closing.try_use();
    REQUIRE(use);
    Status status = Status::ok;
    try {
      closing.send("Once upon a time", params, nullptr, stats);
    } catch (const Error& e) {
      status = e.status();
    }
    CHECK(status == Status::cancelled);
    CHECK(stats.generated_tokens == 0);
  }
}

TEST_CASE("interrupt() stops an exchange's KV between chunks; the next turn computes the rest") {
  auto engine = open_long_context_engine();
  engine::Session stopped(engine, session_options("", "raw", "stopped"));
  engine::Session whole(engine, session_options("", "raw", "whole"));
  const std::string message = long_message();
  const std::string reply = "Yes, a b c.";
  {
    const auto use = whole.try_use();
    whole.add_exchange(message, reply, true);
  }
  const Status status =
      run_while_stopping(stopped, [&] { stopped.add_exchange(message, reply, true); });
  // The exchange is added all the same (OK); only its KV is left to compute.
  CHECK(status == Status::ok);
  REQUIRE(stopped.messages().size() == 2);
  CHECK(stopped.messages()[0].text.size() == message.size());
  CHECK(stopped.messages()[1].text == reply);
  CHECK(stopped.tokens() == whole.tokens());

  check_next_turn_catches_up(stopped, whole);
}
