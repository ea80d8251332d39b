// Rows: out-of-range enum values and numbers, and huge lengths, in every argument that takes
// them. Values outside what parley.h lists are INVALID_ARGUMENT; text too long for the context
// is CONTEXT_FULL; indexes past the end are NOT_FOUND (turns) or INVALID_ARGUMENT (rewind).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "misuse_matrix.h"

namespace parley::test {
namespace {

constexpr parley_status kInvalid = PARLEY_E_INVALID_ARGUMENT;

parley_status open_with(MisuseWorld& w, void (*tweak)(parley_engine_options&)) {
  parley_engine_options o;
  parley_engine_options_init(&o);
  o.model_path = w.model().c_str();
  o.n_threads = 1;
  tweak(o);
  parley_engine* e = reinterpret_cast<parley_engine*>(uintptr_t(0x3));
  const parley_status st = parley_engine_open(&o, &e);
  if (st != PARLEY_OK && e != nullptr) return kRowCheckFailed;  // *out must be NULL
  parley_engine_close(e);
  return st;
}

parley_status create_with(MisuseWorld& w, void (*tweak)(parley_session_options&)) {
  parley_session_options o;
  parley_session_options_init(&o);
  tweak(o);
  parley_session* s = reinterpret_cast<parley_session*>(uintptr_t(0x3));
  const parley_status st = parley_session_create(w.engine(), &o, &s);
  if (st != PARLEY_OK && s != nullptr) return kRowCheckFailed;
  parley_session_close(s);
  return st;
}

parley_status send_with(MisuseWorld& w, void (*tweak)(parley_generate_options&)) {
  parley_generate_options g = quick_generate();
  tweak(g);
  return parley_session_send(w.session(), "a", &g, nullptr, nullptr, nullptr);
}

const std::string& huge_text() {
  static const std::string text = [] {
    std::string t;
    for (int i = 0; i < 200000; ++i) t += "a ";
    return t;
  }();
  return text;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

MisuseRows value_rows() {
  MisuseRows r;
  auto engine = [&](const char* what, parley_status st, void (*tweak)(parley_engine_options&)) {
    r.push_back({"parley_engine_open", what, st, [tweak](MisuseWorld& w) { return open_with(w, tweak); }});
  };
  auto session = [&](const char* what, parley_status st, void (*tweak)(parley_session_options&)) {
    r.push_back({"parley_session_create", what, st,
                 [tweak](MisuseWorld& w) { return create_with(w, tweak); }});
  };
  auto generate = [&](const char* what, parley_status st, void (*tweak)(parley_generate_options&)) {
    r.push_back({"parley_session_send", what, st,
                 [tweak](MisuseWorld& w) { return send_with(w, tweak); }});
  };

  engine("kv_type -1", kInvalid, [](parley_engine_options& o) { o.kv_type = -1; });
  engine("kv_type 4 (past PARLEY_KV_F32)", kInvalid, [](parley_engine_options& o) { o.kv_type = 4; });
  engine("kv_type INT32_MAX", kInvalid, [](parley_engine_options& o) { o.kv_type = INT32_MAX; });
  engine("kv_type INT32_MIN", kInvalid, [](parley_engine_options& o) { o.kv_type = INT32_MIN; });
  engine("n_threads -1", kInvalid, [](parley_engine_options& o) { o.n_threads = -1; });
  engine("n_threads 1025", kInvalid, [](parley_engine_options& o) { o.n_threads = 1025; });
  engine("n_threads INT32_MAX", kInvalid, [](parley_engine_options& o) { o.n_threads = INT32_MAX; });
  engine("device unknown", kInvalid, [](parley_engine_options& o) { o.device = "tpu"; });
  engine("device empty means auto", PARLEY_OK, [](parley_engine_options& o) { o.device = ""; });
  engine("device index past INT32_MAX", kInvalid,
         [](parley_engine_options& o) { o.device = "cuda:99999999999"; });
  engine("device index negative", kInvalid, [](parley_engine_options& o) { o.device = "cuda:-1"; });
  engine("context_length past the model's", kInvalid,
         [](parley_engine_options& o) { o.context_length = 257; });
  engine("context_length UINT32_MAX", kInvalid,
         [](parley_engine_options& o) { o.context_length = UINT32_MAX; });
  engine("store_path empty", kInvalid, [](parley_engine_options& o) { o.store_path = ""; });
  engine("store_path SQLite's in-memory name", kInvalid,
         [](parley_engine_options& o) { o.store_path = ":memory:"; });
  engine("model_path empty", kInvalid, [](parley_engine_options& o) { o.model_path = ""; });
  engine("model_path missing", PARLEY_E_NOT_FOUND,
         [](parley_engine_options& o) { o.model_path = "/nonexistent/parley/model.gguf"; });
  engine("model_path not a model", PARLEY_E_BAD_MODEL,
         [](parley_engine_options& o) { o.model_path = "/"; });
  engine("store_path in a missing directory", PARLEY_E_STORAGE,
         [](parley_engine_options& o) { o.store_path = "/nonexistent/parley/dir/s.db"; });

  session("overflow -1", kInvalid, [](parley_session_options& o) { o.overflow = -1; });
  session("overflow 2 (past DROP_OLDEST)", kInvalid, [](parley_session_options& o) { o.overflow = 2; });
  session("overflow INT32_MIN", kInvalid, [](parley_session_options& o) { o.overflow = INT32_MIN; });
  session("reserved0 set", kInvalid, [](parley_session_options& o) { o.reserved0 = 1; });
  session("chat_template unknown", kInvalid, [](parley_session_options& o) { o.chat_template = "jinja"; });
  session("chat_template empty", kInvalid, [](parley_session_options& o) { o.chat_template = ""; });
  session("chat_template differs in case", kInvalid,
          [](parley_session_options& o) { o.chat_template = "ChatML"; });
  session("id of 128 bytes", kInvalid, [](parley_session_options& o) {
    static const std::string id(128, 'x');
    o.id = id.c_str();
  });
  session("id of 127 bytes", PARLEY_OK, [](parley_session_options& o) {
    static const std::string id(127, 'y');
    o.id = id.c_str();
  });
  session("id of 1 MB", kInvalid, [](parley_session_options& o) { o.id = huge_text().c_str(); });
  session("id with a control character", kInvalid, [](parley_session_options& o) { o.id = "a\tb"; });
  session("id with a C1 control character (U+0085)", kInvalid,
          [](parley_session_options& o) { o.id = "a\xC2\x85" "b"; });
  session("id with U+00A0 (printable)", PARLEY_OK,
          [](parley_session_options& o) { o.id = "a\xC2\xA0" "b"; });
  session("id empty", kInvalid, [](parley_session_options& o) { o.id = ""; });
  session("system prompt of 400 KB", PARLEY_E_CONTEXT_FULL,
          [](parley_session_options& o) { o.system_prompt = huge_text().c_str(); });

  generate("temperature -1", kInvalid, [](parley_generate_options& g) { g.temperature = -1; });
  generate("temperature NaN", kInvalid, [](parley_generate_options& g) { g.temperature = kNaN; });
  generate("temperature +inf", kInvalid, [](parley_generate_options& g) { g.temperature = kInf; });
  generate("top_k -1", kInvalid, [](parley_generate_options& g) { g.top_k = -1; });
  generate("top_p 1.5", kInvalid, [](parley_generate_options& g) { g.top_p = 1.5f; });
  generate("top_p -0.5", kInvalid, [](parley_generate_options& g) { g.top_p = -0.5f; });
  generate("top_p NaN", kInvalid, [](parley_generate_options& g) { g.top_p = kNaN; });
  generate("min_p 2", kInvalid, [](parley_generate_options& g) { g.min_p = 2; });
  generate("min_p NaN", kInvalid, [](parley_generate_options& g) { g.min_p = kNaN; });
  generate("repeat_penalty -1", kInvalid, [](parley_generate_options& g) { g.repeat_penalty = -1; });
  generate("repeat_penalty NaN", kInvalid,
           [](parley_generate_options& g) { g.repeat_penalty = kNaN; });
  generate("ignore_eos -7 means on", PARLEY_OK, [](parley_generate_options& g) { g.ignore_eos = -7; });
  generate("max_tokens UINT32_MAX: up to the context", PARLEY_OK, [](parley_generate_options& g) {
    g.max_tokens = UINT32_MAX;
    g.temperature = 0;
  });
  generate("stop: 17 strings", kInvalid, [](parley_generate_options& g) {
    static const char* const kMany[17] = {"a", "b", "c", "d", "e", "f", "g", "h", "i",
                                          "j", "k", "l", "m", "n", "o", "p", "q"};
    g.stop = kMany;
    g.n_stop = 17;
  });
  generate("stop NULL with n_stop 1", kInvalid, [](parley_generate_options& g) { g.n_stop = 1; });
  generate("stop[1] NULL", kInvalid, [](parley_generate_options& g) {
    static const char* const kWithNull[2] = {"x", nullptr};
    g.stop = kWithNull;
    g.n_stop = 2;
  });
  generate("stop: an empty string", kInvalid, [](parley_generate_options& g) {
    static const char* const kEmpty[1] = {""};
    g.stop = kEmpty;
    g.n_stop = 1;
  });
  generate("stop: a string of 257 bytes", kInvalid, [](parley_generate_options& g) {
    static const std::string kLong(257, 'x');
    static const char* const kStrings[1] = {kLong.c_str()};
    g.stop = kStrings;
    g.n_stop = 1;
  });
  generate("stop: 16 strings, one of 256 bytes", PARLEY_OK, [](parley_generate_options& g) {
    static const std::string kLongest(256, 'x');
    static const char* const kStrings[16] = {kLongest.c_str(), "b", "c", "d", "e", "f", "g", "h",
                                             "i", "j", "k", "l", "m", "n", "o", "p"};
    g.stop = kStrings;
    g.n_stop = 16;
  });
  generate("stop strings with n_stop 0: none", PARLEY_OK, [](parley_generate_options& g) {
    static const char* const kUnread[1] = {nullptr};
    g.stop = kUnread;
  });
  generate("reserved0 1", kInvalid, [](parley_generate_options& g) { g.reserved0 = 1; });
  generate("format 2", kInvalid, [](parley_generate_options& g) { g.format = 2; });
  generate("format -1", kInvalid, [](parley_generate_options& g) { g.format = -1; });
  generate("format JSON, reply_prefix not an object's start", kInvalid,
           [](parley_generate_options& g) {
             g.format = PARLEY_FORMAT_JSON;
             g.reply_prefix = "[";
           });
  generate("format JSON, reply_prefix an object's start", PARLEY_OK,
           [](parley_generate_options& g) {
             g.format = PARLEY_FORMAT_JSON;
             g.reply_prefix = " {\"a\": ";
           });
  generate("json_schema with format TEXT", kInvalid,
           [](parley_generate_options& g) { g.json_schema = "{}"; });
  generate("json_schema not JSON", kInvalid, [](parley_generate_options& g) {
    g.format = PARLEY_FORMAT_JSON;
    g.json_schema = "{\"type\": ";
  });
  generate("json_schema not valid UTF-8", kInvalid, [](parley_generate_options& g) {
    g.format = PARLEY_FORMAT_JSON;
    g.json_schema = "{\"title\": \"\xFF\"}";
  });
  generate("json_schema with a keyword outside the subset", PARLEY_E_UNSUPPORTED,
           [](parley_generate_options& g) {
             g.format = PARLEY_FORMAT_JSON;
             g.json_schema = "{\"minProperties\": 1}";
           });
  generate("json_schema \"\": none", PARLEY_OK, [](parley_generate_options& g) {
    g.format = PARLEY_FORMAT_JSON;
    g.json_schema = "";
  });
  generate("json_schema that reply_prefix breaks", kInvalid, [](parley_generate_options& g) {
    g.format = PARLEY_FORMAT_JSON;
    g.json_schema = "{\"properties\": {\"a\": {\"type\": \"integer\"}}}";
    g.reply_prefix = "{\"a\": \"";
  });
  generate("logit_bias NULL, n_logit_bias 1", kInvalid,
           [](parley_generate_options& g) { g.n_logit_bias = 1; });
  generate("logit_bias: n_logit_bias 2^24 + 1", kInvalid, [](parley_generate_options& g) {
    static const parley_logit_bias kOne[1] = {{1, 1.0f}};  // never read that far
    g.logit_bias = kOne;
    g.n_logit_bias = (1u << 24) + 1;
  });
  const auto bias_row = [&](const char* what, parley_status st, parley_logit_bias entry) {
    r.push_back({"parley_session_send", what, st, [entry](MisuseWorld& w) {
                   parley_generate_options g = quick_generate();
                   g.logit_bias = &entry;
                   g.n_logit_bias = 1;
                   return parley_session_send(w.session(), "a", &g, nullptr, nullptr, nullptr);
                 }});
  };
  bias_row("logit_bias: token -1", kInvalid, {-1, 1.0f});
  bias_row("logit_bias: a token past any vocabulary", kInvalid, {1 << 30, 1.0f});
  bias_row("logit_bias: a NaN bias", kInvalid, {1, std::numeric_limits<float>::quiet_NaN()});
  bias_row("logit_bias: a +inf bias", kInvalid, {1, std::numeric_limits<float>::infinity()});
  bias_row("logit_bias: a -inf bias bans the token", PARLEY_OK,
           {1, -std::numeric_limits<float>::infinity()});
  generate("logit_bias: a token listed twice", kInvalid, [](parley_generate_options& g) {
    static const parley_logit_bias kTwice[2] = {{3, 1.0f}, {3, 2.0f}};
    g.logit_bias = kTwice;
    g.n_logit_bias = 2;
  });
  generate("logit_bias with n_logit_bias 0: none", PARLEY_OK, [](parley_generate_options& g) {
    static const parley_logit_bias kUnread[1] = {{-1, 0.0f}};
    g.logit_bias = kUnread;
  });

  r.push_back({"parley_session_send", "400 KB of text", PARLEY_E_CONTEXT_FULL,
               [](MisuseWorld& w) { return send_text(w.session(), huge_text().c_str()); }});
  r.push_back({"parley_session_send", "a reply prefix of 400 KB", PARLEY_E_CONTEXT_FULL,
               [](MisuseWorld& w) {
                 parley_generate_options g = quick_generate();
                 const std::string prefix = huge_text();
                 g.reply_prefix = prefix.c_str();
                 return parley_session_send(w.session(), "a", &g, nullptr, nullptr, nullptr);
               }});
  r.push_back({"parley_session_add_exchange", "a reply of 400 KB", PARLEY_E_CONTEXT_FULL,
               [](MisuseWorld& w) {
                 return parley_session_add_exchange(w.session(), "a", huge_text().c_str());
               }});
  r.push_back({"parley_session_continue", "no message yet", kInvalid, [](MisuseWorld& w) {
                 const parley_generate_options g = quick_generate();
                 return parley_session_continue(w.session(), &g, nullptr, nullptr, nullptr);
               }});
  r.push_back({"parley_session_continue", "a reply prefix steers a reply under way", PARLEY_OK,
               [](MisuseWorld& w) {
                 parley_generate_options g = quick_generate();
                 g.reply_prefix = "and";
                 return parley_session_continue(w.session_with_turn(), &g, nullptr, nullptr,
                                                nullptr);
               }});
  r.push_back({"parley_session_continue", "a bad option (top_p 2)", kInvalid,
               [](MisuseWorld& w) {
                 parley_generate_options g = quick_generate();
                 g.top_p = 2;
                 return parley_session_continue(w.session_with_turn(), &g, nullptr, nullptr,
                                                nullptr);
               }});
  const auto score = [](size_t n_replies, uint32_t flags) {
    return [n_replies, flags](MisuseWorld& w) {
      std::vector<const char*> replies(std::max<size_t>(n_replies, 1), "b");
      std::vector<double> lp(replies.size());
      return parley_session_score_replies(w.session(), "a", replies.data(), n_replies, flags,
                                          lp.data(), nullptr);
    };
  };
  r.push_back({"parley_session_score_replies", "no replies", kInvalid, score(0, 0)});
  r.push_back({"parley_session_score_replies", "PARLEY_MAX_SCORED_REPLIES replies", PARLEY_OK,
               score(PARLEY_MAX_SCORED_REPLIES, PARLEY_SCORE_WITH_END)});
  r.push_back({"parley_session_score_replies", "one reply more than PARLEY_MAX_SCORED_REPLIES",
               kInvalid, score(PARLEY_MAX_SCORED_REPLIES + 1, 0)});
  r.push_back({"parley_session_score_replies", "an unknown flag", kInvalid, score(1, 2)});
  r.push_back({"parley_session_score_replies", "a reply of 400 KB", PARLEY_E_CONTEXT_FULL,
               [](MisuseWorld& w) {
                 const std::string huge = huge_text();
                 const char* const replies[] = {"b", huge.c_str()};
                 double lp[2] = {};
                 return parley_session_score_replies(w.session(), "a", replies, 2, 0, lp,
                                                     nullptr);
               }});
  r.push_back({"parley_session_set_system_prompt", "400 KB of text", PARLEY_E_CONTEXT_FULL,
               [](MisuseWorld& w) {
                 return parley_session_set_system_prompt(w.session_with_turn(),
                                                         huge_text().c_str());
               }});
  r.push_back({"parley_session_set_overflow", "not a PARLEY_OVERFLOW_* value", kInvalid,
               [](MisuseWorld& w) { return parley_session_set_overflow(w.session(), 7); }});
  r.push_back({"parley_session_rewind", "more turns than there are", kInvalid,
               [](MisuseWorld& w) { return parley_session_rewind(w.session_with_turn(), 3); }});
  r.push_back({"parley_session_rewind", "UINT32_MAX turns", kInvalid, [](MisuseWorld& w) {
                 return parley_session_rewind(w.session_with_turn(), UINT32_MAX);
               }});
  r.push_back({"parley_session_get_turn", "index past the end", PARLEY_E_NOT_FOUND,
               [](MisuseWorld& w) {
                 parley_turn t;
                 t.struct_size = sizeof t;
                 return parley_session_get_turn(w.session_with_turn(), 2, &t);
               }});
  r.push_back({"parley_session_get_turn", "index UINT32_MAX", PARLEY_E_NOT_FOUND,
               [](MisuseWorld& w) {
                 parley_turn t;
                 t.struct_size = sizeof t;
                 return parley_session_get_turn(w.session(), UINT32_MAX, &t);
               }});
  r.push_back({"parley_session_suspend", "no store", PARLEY_E_UNSUPPORTED,
               [](MisuseWorld& w) { return parley_session_suspend(w.session_with_turn()); }});
  r.push_back({"parley_session_open", "no store", PARLEY_E_NOT_FOUND, [](MisuseWorld& w) {
                 parley_session* s = nullptr;
                 return parley_session_open(w.engine(), "x", &s);
               }});
  r.push_back({"parley_session_open", "no such session", PARLEY_E_NOT_FOUND, [](MisuseWorld& w) {
                 parley_session* s = nullptr;
                 return parley_session_open(w.engine_with_store(), "nobody", &s);
               }});
  r.push_back({"parley_session_open", "id of 1 MB", PARLEY_E_NOT_FOUND, [](MisuseWorld& w) {
                 parley_session* s = nullptr;
                 return parley_session_open(w.engine_with_store(), huge_text().c_str(), &s);
               }});
  r.push_back({"parley_session_open", "empty id", kInvalid, [](MisuseWorld& w) {
                 parley_session* s = nullptr;
                 return parley_session_open(w.engine_with_store(), "", &s);
               }});
  r.push_back({"parley_session_delete", "no store", PARLEY_E_NOT_FOUND,
               [](MisuseWorld& w) { return parley_session_delete(w.engine(), "x"); }});
  r.push_back({"parley_session_delete", "empty id", kInvalid,
               [](MisuseWorld& w) { return parley_session_delete(w.engine_with_store(), ""); }});
  r.push_back({"parley_session_fork", "new_id of 128 bytes", kInvalid, [](MisuseWorld& w) {
                 static const std::string id(128, 'f');
                 parley_session* f = nullptr;
                 return parley_session_fork(w.session_with_turn(), id.c_str(), &f);
               }});
  r.push_back({"parley_session_import", "new_id of 128 bytes", kInvalid, [](MisuseWorld& w) {
                 static const std::string id(128, 'f');
                 parley_session* s = nullptr;
                 return parley_session_import(w.engine(), kTextsOnlyConversation, id.c_str(), &s);
               }});
  r.push_back({"parley_session_import", "new_id empty", kInvalid, [](MisuseWorld& w) {
                 parley_session* s = nullptr;
                 return parley_session_import(w.engine(), kTextsOnlyConversation, "", &s);
               }});
  r.push_back({"parley_session_import", "json of 1 MB that is not JSON", kInvalid,
               [](MisuseWorld& w) {
                 parley_session* s = nullptr;
                 return parley_session_import(w.engine(), huge_text().c_str(), nullptr, &s);
               }});
  r.push_back({"parley_session_fork", "new_id empty", kInvalid, [](MisuseWorld& w) {
                 parley_session* f = nullptr;
                 return parley_session_fork(w.session_with_turn(), "", &f);
               }});
  for (int32_t id : {-1, 320, INT32_MAX, INT32_MIN}) {
    r.push_back({"parley_detokenize", "id " + std::to_string(id) + " outside the vocabulary",
                 kInvalid, [id](MisuseWorld& w) {
                   size_t n = 0;
                   return parley_detokenize(w.engine(), &id, 1, nullptr, 0, &n);
                 }});
  }
  r.push_back({"parley_tokenize", "add_bos -3 means yes", PARLEY_OK, [](MisuseWorld& w) {
                 int32_t ids[4];
                 size_t n = 0;
                 const parley_status st = parley_tokenize(w.engine(), "", -3, ids, 4, &n);
                 return st == PARLEY_OK && n == 1 ? PARLEY_OK : kRowCheckFailed;
               }});
  r.push_back({"parley_tokenize", "400 KB of text, size only", PARLEY_OK, [](MisuseWorld& w) {
                 size_t n = 0;
                 return parley_tokenize(w.engine(), huge_text().c_str(), 0, nullptr, 0, &n);
               }});
  r.push_back({"parley_detokenize", "a 1-byte buffer holds only the NUL", PARLEY_OK,
               [](MisuseWorld& w) {
                 const int32_t ids[] = {300, 301, 302};
                 char b[1] = {'x'};
                 size_t n = 0;
                 const parley_status st = parley_detokenize(w.engine(), ids, 3, b, 1, &n);
                 return st == PARLEY_OK && b[0] == '\0' && n > 1 ? PARLEY_OK : kRowCheckFailed;
               }});
  for (parley_status s : {-1, 16, 1000, INT32_MIN, INT32_MAX}) {
    r.push_back({"parley_status_name", "code " + std::to_string(s) + " is PARLEY_E_UNKNOWN",
                 PARLEY_OK,
                 [s](MisuseWorld&) {
                   return std::string(parley_status_name(s)) == "PARLEY_E_UNKNOWN"
                              ? PARLEY_OK
                              : kRowCheckFailed;
                 },
                 false});
  }
  return r;
}

}  // namespace parley::test
