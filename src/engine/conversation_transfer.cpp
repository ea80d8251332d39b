// A conversation out of and into portable JSON (conversation_json.h): a game's save file, a
// conversation carried to another store, machine or model.
#include <string>

#include "common/error.h"
#include "common/shown_id.h"
#include "engine/clock.h"
#include "engine/conversation_json.h"
#include "engine/engine.h"
#include "engine/session.h"
#include "text/chat_template.h"

namespace parley::engine {
namespace {

// Roles in an order a conversation can have: the system message first and only there, an
// assistant message only after a user message. Returns where the exchanges start.
size_t check_order(const ConversationJson& c) {
  const auto& turns = c.turns;
  const size_t first = !turns.empty() && turns[0].role == int32_t(Role::system) ? 1 : 0;
  require(first || c.header.system_prompt.empty(), Status::invalid_argument,
          "conversation JSON: 'system_prompt' is given, but the system message (messages[0], "
          "with the same text) is missing");
  require(!first || turns[0].text == c.header.system_prompt, Status::invalid_argument,
          "conversation JSON: 'system_prompt' and the system message (messages[0]) differ");
  require(!first || turns[0].token_ids.empty(), Status::invalid_argument,
          "conversation JSON: the system message has tokens; its ids are the first user "
          "message's");
  for (size_t i = first; i < turns.size(); ++i) {
    const std::string where = "conversation JSON: messages[" + std::to_string(i) + "] ";
    require(turns[i].role != int32_t(Role::system), Status::invalid_argument,
            where + "is a system message; only messages[0] can be");
    require(turns[i].role != int32_t(Role::assistant) ||
                (i > first && turns[i - 1].role == int32_t(Role::user)),
            Status::invalid_argument, where + "is a reply that no user message comes before");
  }
  return first;
}

// Adds each exchange from its texts, then stores the conversation whole: nothing is left in
// the store when one fails. A reply the file says is closed ends with the template's end ids;
// others are left open, as written ones.
std::unique_ptr<Session> import_texts(std::shared_ptr<Engine> engine, const ConversationJson& c,
                                      size_t first) {
  SessionOptions options;
  options.id = c.header.id;
  options.system_prompt = c.header.system_prompt;
  options.chat_template = text::template_from_name(c.header.chat_template);
  options.cache_scope = c.header.cache_scope;
  options.overflow = OverflowPolicy(c.header.overflow);
  if (c.has_created_ms) options.created_ms = c.header.created_ms;
  options.store_when_built = true;
  auto session = std::make_unique<Session>(engine, options);
  {
    const auto use = session->try_use();
    const bool drops = OverflowPolicy(c.header.overflow) == OverflowPolicy::drop_oldest;
    for (size_t i = first; i < c.turns.size(); ++i) {
      if (c.turns[i].role != int32_t(Role::user)) continue;
      const bool replied =
          i + 1 < c.turns.size() && c.turns[i + 1].role == int32_t(Role::assistant);
      const bool last = i + (replied ? 2 : 1) >= c.turns.size();
      const bool ended = replied && c.turns[i + 1].closed;
      try {
        session->add_exchange(c.turns[i].text, replied ? c.turns[i + 1].text : "", ended);
      } catch (const Error& e) {
        // Under DROP_OLDEST an older exchange too long for the context even alone would give
        // way to the later ones anyway: it is left out. The last one must fit.
        if (e.status() == Status::context_full && drops && !last) continue;
        fail(e.status(), "conversation JSON: messages[" + std::to_string(i) + "]" +
                             (replied ? " and its reply" : "") + ": " + e.what());
      }
      // A conversation that ends with a user message awaits its reply, as after a rewind.
      if (!replied && i + 1 == c.turns.size()) session->rewind(1);
    }
    session->store_built();
  }
  return session;
}

}  // namespace

std::string Session::export_json() const {
  return write_conversation_json(stored_header(), stored_turns(0));
}

std::unique_ptr<Session> Session::import_json(std::shared_ptr<Engine> engine,
                                              std::string_view json, const std::string& new_id) {
  ConversationJson c = read_conversation_json(json);
  if (!new_id.empty()) c.header.id = new_id;
  require(text::template_from_name(c.header.chat_template).has_value(), Status::invalid_argument,
          "conversation JSON: 'chat_template' " + shown_id(c.header.chat_template) + " is unknown");
  const size_t first = check_order(c);
  size_t n_ids = 0;
  for (const auto& t : c.turns) n_ids += t.token_ids.size();
  // Too long for this engine's context under DROP_OLDEST: the exchanges are added one by one,
  // and the oldest give way as they would to a send.
  const bool drops = n_ids > engine->context_length() &&
                     OverflowPolicy(c.header.overflow) == OverflowPolicy::drop_oldest;
  if (!c.has_token_ids || c.header.model_fingerprint != engine->model().fingerprint || drops) {
    return import_texts(std::move(engine), c, first);
  }
  if (!c.has_created_ms) c.header.created_ms = unix_ms();
  return std::unique_ptr<Session>(
      new Session(std::move(engine), c.header, std::move(c.turns), ImportTag{}));
}

}  // namespace parley::engine
