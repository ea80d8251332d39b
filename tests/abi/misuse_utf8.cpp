// Rows: invalid UTF-8 in every text argument (parley.h: strings are UTF-8). Each kind of
// ill-formed sequence the Unicode standard names is INVALID_ARGUMENT in text to send or
// tokenize, written exchanges, reply prefixes, stop strings, session ids, system prompts and
// cache scopes; an id that no session can have is simply not found by open and delete.
#include <string>

#include "misuse_matrix.h"

namespace parley::test {
namespace {

constexpr parley_status kInvalid = PARLEY_E_INVALID_ARGUMENT;

struct Bad {
  const char* what;
  const char* bytes;
};

const Bad kBad[] = {
    {"lone continuation byte", "ab\x80"},
    {"overlong 2-byte '/'", "\xC0\xAF"},
    {"overlong 3-byte", "\xE0\x80\xAF"},
    {"truncated 3-byte sequence", "x\xE2\x82"},
    {"UTF-16 surrogate", "\xED\xA0\x80"},
    {"code point past U+10FFFF", "\xF4\x90\x80\x80"},
    {"byte F5", "\xF5\x80\x80\x80"},
    {"byte FF", "\xFF hello"},
};

}  // namespace

MisuseRows utf8_rows() {
  MisuseRows r;
  for (const Bad& b : kBad) {
    const std::string text = std::string("a ") + b.bytes + " z";
    r.push_back({"parley_session_send", b.what, kInvalid,
                 [text](MisuseWorld& w) { return send_text(w.session(), text.c_str()); }});
    r.push_back({"parley_tokenize", b.what, kInvalid, [text](MisuseWorld& w) {
                   size_t n = 0;
                   return parley_tokenize(w.engine(), text.c_str(), 1, nullptr, 0, &n);
                 }});
    r.push_back({"parley_session_create", std::string("id: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_session_options o;
                   parley_session_options_init(&o);
                   o.id = text.c_str();
                   parley_session* s = nullptr;
                   return parley_session_create(w.engine(), &o, &s);
                 }});
    r.push_back({"parley_session_create", std::string("system prompt: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_session_options o;
                   parley_session_options_init(&o);
                   o.system_prompt = text.c_str();
                   parley_session* s = nullptr;
                   return parley_session_create(w.engine(), &o, &s);
                 }});
    r.push_back({"parley_session_create", std::string("cache_scope: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_session_options o;
                   parley_session_options_init(&o);
                   o.cache_scope = text.c_str();
                   parley_session* s = nullptr;
                   return parley_session_create(w.engine(), &o, &s);
                 }});
    r.push_back({"parley_session_send", std::string("stop string: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_generate_options g = quick_generate();
                   const char* const stop[] = {text.c_str()};
                   g.stop = stop;
                   g.n_stop = 1;
                   return parley_session_send(w.session(), "a", &g, nullptr, nullptr, nullptr);
                 }});
    r.push_back({"parley_session_send", std::string("reply prefix: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_generate_options g = quick_generate();
                   g.reply_prefix = text.c_str();
                   return parley_session_send(w.session(), "a", &g, nullptr, nullptr, nullptr);
                 }});
    r.push_back({"parley_session_count_tokens", b.what, kInvalid, [text](MisuseWorld& w) {
                   return parley_session_count_tokens(w.session(), text.c_str(), nullptr,
                                                      nullptr);
                 }});
    r.push_back({"parley_session_continue", std::string("reply prefix: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_generate_options g = quick_generate();
                   g.reply_prefix = text.c_str();
                   return parley_session_continue(w.session_with_turn(), &g, nullptr, nullptr,
                                                  nullptr);
                 }});
    r.push_back({"parley_session_score_replies", std::string("user text: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   const char* const replies[] = {"b"};
                   double lp = 0;
                   return parley_session_score_replies(w.session(), text.c_str(), replies, 1, 0,
                                                       &lp, nullptr);
                 }});
    r.push_back({"parley_session_score_replies", std::string("reply: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   const char* const replies[] = {"b", text.c_str()};
                   double lp[2] = {};
                   return parley_session_score_replies(w.session(), "a", replies, 2, 0, lp,
                                                       nullptr);
                 }});
    r.push_back({"parley_session_add_exchange", std::string("user text: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   return parley_session_add_exchange(w.session(), text.c_str(), "b");
                 }});
    r.push_back({"parley_session_add_exchange", std::string("reply text: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   return parley_session_add_exchange(w.session(), "a", text.c_str());
                 }});
    r.push_back({"parley_session_set_system_prompt", b.what, kInvalid, [text](MisuseWorld& w) {
                   return parley_session_set_system_prompt(w.session_with_turn(), text.c_str());
                 }});
    r.push_back({"parley_session_import", std::string("new_id: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_session* s = nullptr;
                   return parley_session_import(w.engine(), kTextsOnlyConversation,
                                                text.c_str(), &s);
                 }});
    r.push_back({"parley_session_import", std::string("a message's text: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   std::string json = kTextsOnlyConversation;
                   json.replace(json.find("\"a\""), 3, "\"" + text + "\"");
                   parley_session* s = nullptr;
                   return parley_session_import(w.engine(), json.c_str(), nullptr, &s);
                 }});
    r.push_back({"parley_session_fork", std::string("new_id: ") + b.what, kInvalid,
                 [text](MisuseWorld& w) {
                   parley_session* f = nullptr;
                   return parley_session_fork(w.session_with_turn(), text.c_str(), &f);
                 }});
  }
  r.push_back({"parley_session_open", "id with invalid UTF-8", PARLEY_E_NOT_FOUND,
               [](MisuseWorld& w) {
                 parley_session* s = nullptr;
                 return parley_session_open(w.engine_with_store(), "\xC0\xAF", &s);
               }});
  r.push_back({"parley_session_delete", "id with invalid UTF-8", PARLEY_E_NOT_FOUND,
               [](MisuseWorld& w) { return parley_session_delete(w.engine_with_store(), "\xFF"); }});
  return r;
}

}  // namespace parley::test
