#include "cli_args.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace chat {
namespace {

std::invalid_argument bad_value(std::string_view flag, std::string_view value, const char* want) {
  return std::invalid_argument("invalid value for " + std::string(flag) + ": '" +
                               std::string(value) + "' (expected " + want + ")");
}

// Decimal digits only, as from_chars reads them: no blanks on either side, no '+', no hex.
long long parse_integer(std::string_view flag, const char* s, long long lo, long long hi) {
  const std::string_view v = s;
  long long n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) {
    throw bad_value(flag, s, ("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                              "]").c_str());
  }
  return n;
}

uint32_t parse_u32(std::string_view flag, const char* s) {
  return uint32_t(parse_integer(flag, s, 0, UINT32_MAX));
}

// The whole uint64 range (a seed), which long long cannot hold.
uint64_t parse_u64(std::string_view flag, const char* s) {
  const std::string_view v = s;
  unsigned long long n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) {
    throw bad_value(flag, s, "an integer in [0, 18446744073709551615]");
  }
  return n;
}

// An empty id names no conversation: refused here, naming the flag, rather than by the
// library once the model is loaded.
std::string parse_session_id(std::string_view flag, const char* s) {
  if (*s == '\0') throw bad_value(flag, s, "a conversation id, at least one character");
  return s;
}

// A finite number in [lo, hi]; `want` says which in a refusal.
struct Range {
  float lo, hi;
  const char* want;
};
constexpr Range kAnyNumber{-FLT_MAX, FLT_MAX, "a number"};
// The ranges parley_generate_options takes (parley.h): the library would refuse the rest at
// every message.
constexpr Range kTemperature{0, FLT_MAX, "a number >= 0; 0 = greedy"};
constexpr Range kTopP{0, 1, "a number in [0, 1]; 1 = off"};
constexpr Range kMinP{0, 1, "a number in [0, 1]; 0 = off"};
constexpr Range kRepeatPenalty{0, FLT_MAX, "a number >= 0; 1 = off"};

// A decimal number (1.5, 2e-3), strict as parse_integer: strtof would also take blanks before
// it and hex ("0x10" = 16).
float parse_float(std::string_view flag, const char* s, const Range& range = kAnyNumber) {
  const std::string_view t = s;
  float v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range && end == t.data() + t.size()) {
    // A number that a float cannot hold is refused for that, not for the range it may be in.
    const bool huge = std::fabs(std::strtod(s, nullptr)) > 1;
    throw bad_value(flag, s,
                    huge ? "a number a float can hold: at most 3.4e38 in size"
                         : "a number a float can hold: 0, or at least 1.4e-45 in size");
  }
  // Written so that NaN fails the range test too.
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v) ||
      !(v >= range.lo && v <= range.hi)) {
    throw bad_value(flag, s, range.want);
  }
  return v;
}

// "ID=BIAS", BIAS a number or -inf (a ban).
parley_logit_bias parse_logit_bias(const char* s) {
  const std::string_view v = s;
  const auto eq = v.find('=');
  const char* want = "ID=BIAS: a token id, then a number or -inf";
  if (eq == std::string_view::npos) throw bad_value("--logit-bias", v, want);
  const std::string id(v.substr(0, eq)), bias(v.substr(eq + 1));
  parley_logit_bias b;
  try {
    b.token = int32_t(parse_integer("--logit-bias", id.c_str(), 0, INT32_MAX));
    b.bias = bias == "-inf" ? -INFINITY : parse_float("--logit-bias", bias.c_str());
  } catch (const std::invalid_argument&) {
    throw bad_value("--logit-bias", v, want);
  }
  return b;
}

int32_t parse_kv(const char* s) {
  const std::string_view v = s;
  if (v == "default") return PARLEY_KV_DEFAULT;
  if (v == "int8") return PARLEY_KV_INT8;
  if (v == "f16") return PARLEY_KV_F16;
  if (v == "f32") return PARLEY_KV_F32;
  throw bad_value("--kv", v, "int8, f16, f32 or default");
}

int32_t parse_overflow(const char* s) {
  const std::string_view v = s;
  if (v == "error") return PARLEY_OVERFLOW_ERROR;
  if (v == "drop-oldest") return PARLEY_OVERFLOW_DROP_OLDEST;
  throw bad_value("--overflow", v, "error or drop-oldest");
}

int32_t parse_format(const char* s) {
  const std::string_view v = s;
  if (v == "text") return PARLEY_FORMAT_TEXT;
  if (v == "json") return PARLEY_FORMAT_JSON;
  throw bad_value("--format", v, "text or json");
}

// The --json-schema file's text. The library takes at most 1 MiB: a larger file (or
// /dev/zero) is read only that far, and refused.
std::string read_schema_file(const char* path) {
  constexpr size_t kMaxBytes = (size_t{1} << 20) + 1;
  std::FILE* f = std::fopen(path, "rb");
  if (!f) {
    throw std::invalid_argument("cannot read the --json-schema file '" + std::string(path) +
                                "': " + std::strerror(errno));
  }
  std::string text;
  char chunk[65536];
  size_t n = 0;
  while (text.size() < kMaxBytes && (n = std::fread(chunk, 1, sizeof chunk, f)) > 0) {
    text.append(chunk, n);
  }
  const int err = std::ferror(f) ? errno : 0;  // e.g. a directory: EISDIR
  std::fclose(f);
  if (err) {
    throw std::invalid_argument("cannot read the --json-schema file '" + std::string(path) +
                                "': " + std::strerror(err));
  }
  if (text.empty()) {
    throw std::invalid_argument("the --json-schema file '" + std::string(path) + "' is empty");
  }
  return text;
}

// The generation flags the library would refuse at every message, refused at start instead,
// where the flag can be named. The vocabulary waits for the model (logit_bias_problem()), and
// so does the check that the texts are UTF-8 (the library's tokenizer makes it: main.cpp).
void check_generate_flags(const CliArgs& args) {
  if (args.stop_strings.size() > PARLEY_MAX_STOP_STRINGS) {
    throw std::invalid_argument("more than " + std::to_string(PARLEY_MAX_STOP_STRINGS) +
                                " --stop strings");
  }
  for (const auto& s : args.stop_strings) {
    if (s.empty() || s.size() > PARLEY_MAX_STOP_BYTES) {
      throw std::invalid_argument("a --stop text has 1 to " +
                                  std::to_string(PARLEY_MAX_STOP_BYTES) + " bytes");
    }
  }
  std::vector<int32_t> ids;
  for (const auto& b : args.logit_bias) ids.push_back(b.token);
  std::sort(ids.begin(), ids.end());
  const auto twice = std::adjacent_find(ids.begin(), ids.end());
  if (twice != ids.end()) {
    throw std::invalid_argument("--logit-bias gives token " + std::to_string(*twice) +
                                " twice (give each token once)");
  }
  if (args.json_schema && parley_check_json_schema(args.json_schema->c_str()) != PARLEY_OK) {
    std::string_view message = parley_last_error();
    constexpr std::string_view kFunction = "parley_check_json_schema: ";
    if (message.starts_with(kFunction)) message.remove_prefix(kFunction.size());
    throw std::invalid_argument("--json-schema: " + std::string(message));
  }
}

}  // namespace

const char* usage() {
  return "usage: parley-chat -m MODEL [options]\n"
         "\n"
         "Chat with a local model. Without -p: an interactive console that can hold several\n"
         "conversations at once (/new, /switch, /fork, /rewind, /sessions; type /help there).\n"
         "With -p: one-shot mode; stdout holds the reply only.\n"
         "With --store, conversations outlive the run: every turn is committed to the file, and\n"
         "--session ID (or /open ID in the console) continues one. Turns the store refuses\n"
         "(another program changed the conversation, a full disk) go to FILE.unsaved-ID-TIME.json\n"
         "beside it (or in $TMPDIR, or else onto stderr) as the conversation closes, and the exit\n"
         "status is 1.\n"
         "\n"
         "  -m, --model PATH        GGUF file or Hugging Face model directory (required)\n"
         "  -p, --prompt TEXT       one-shot: send TEXT, print the reply, exit. TEXT is sent as\n"
         "                          given, also blank (the console skips blank lines): with\n"
         "                          --template raw, -p '' continues from the start token alone\n"
         "  -s, --system TEXT       system prompt (also of conversations started with /new)\n"
         "      --template NAME     raw, llama2, chatml, zephyr or mistral (default: the model's)\n"
         "  -n, --max-tokens N      reply length limit (default 256; 0 = up to the context)\n"
         "      --temp T            temperature (default 0.8; 0 = greedy)\n"
         "      --top-k K           (default 40; 0 = off)\n"
         "      --top-p P           (default 0.95; 1 = off)\n"
         "      --min-p P           (default 0.05; 0 = off)\n"
         "      --repeat-penalty R  (default 1.0 = off)\n"
         "      --repeat-last-n N   tokens the penalty looks at (default 64)\n"
         "      --seed S            (default and 0: a random seed)\n"
         "      --ignore-eos        never stop at end tokens\n"
         "      --stop TEXT         end the reply before TEXT, which is not shown (repeat for\n"
         "                          several, up to 16; --stop $'\\n' gives one-line replies)\n"
         "      --reply-prefix TEXT every reply starts with TEXT and the model goes on from it\n"
         "      --logit-bias ID=B   add B to token ID's logit; B = -inf bans it (repeat for more)\n"
         "      --format F          text (the default) or json: every reply is one JSON object\n"
         "                          and ends where it closes (say what to write in -s or the\n"
         "                          message)\n"
         "      --json-schema FILE  every reply is one JSON object that the JSON Schema in FILE\n"
         "                          accepts (implies --format json; the subset the library\n"
         "                          takes: type, enum, const, properties, required, items,\n"
         "                          minItems, maxItems, anyOf, $ref, ...)\n"
         "      --threads N         CPU threads (default: one per core)\n"
         "      --device D          auto, cpu, cuda or cuda:N (default auto)\n"
         "      --kv TYPE           KV cache type: int8 (the default; also 'default'), f16, f32\n"
         "      --ctx N             context length (default: the model's)\n"
         "      --overflow POLICY   when a message does not fit the context: error (default)\n"
         "                          or drop-oldest (forget the oldest exchanges, also in the\n"
         "                          store; the system prompt stays). A stored conversation\n"
         "                          keeps its own unless this flag is given: then the flag's\n"
         "                          becomes its policy, also in the store, for later runs too\n"
         "      --print-ids         after each reply, print 'ids: <token ids>': the whole\n"
         "                          reply's, a --reply-prefix's and, after /continue, the\n"
         "                          earlier part's included\n"
         "      --store FILE        keep conversations in this SQLite file (created when missing)\n"
         "      --session ID        with --store: continue the stored conversation ID, or start\n"
         "                          it when there is none (it keeps its own system prompt and\n"
         "                          template); without --store: the new conversation's id\n"
         "      --idle-spill MS     with --store: move the KV of conversations idle this long to\n"
         "                          the store, freeing memory (default 0 = only when memory is\n"
         "                          short)\n"
         "  -h, --help              this text\n"
         "      --version           the library version\n";
}

GenerateOptions::GenerateOptions(const CliArgs& args) : options_(args.gen) {
  for (const auto& s : args.stop_strings) stop_.push_back(s.c_str());
  options_.stop = stop_.empty() ? nullptr : stop_.data();
  options_.n_stop = uint32_t(stop_.size());
  options_.reply_prefix = args.reply_prefix ? args.reply_prefix->c_str() : nullptr;
  options_.logit_bias = args.logit_bias.empty() ? nullptr : args.logit_bias.data();
  options_.n_logit_bias = uint32_t(args.logit_bias.size());
  options_.json_schema = args.json_schema ? args.json_schema->c_str() : nullptr;
}

CliArgs parse_args(int argc, char** argv) {
  CliArgs a;
  parley_generate_options_init(&a.gen);
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument("missing value for " + std::string(flag));
      return argv[++i];
    };
    if (flag == "-h" || flag == "--help") a.help = true;
    else if (flag == "--version") a.version = true;
    else if (flag == "-m" || flag == "--model") a.model = value();
    else if (flag == "-p" || flag == "--prompt") a.prompt = value();
    else if (flag == "-s" || flag == "--system") a.system_prompt = value();
    else if (flag == "--template") a.chat_template = value();
    else if (flag == "-n" || flag == "--max-tokens") a.gen.max_tokens = parse_u32(flag, value());
    else if (flag == "--temp") a.gen.temperature = parse_float(flag, value(), kTemperature);
    else if (flag == "--top-k") a.gen.top_k = int32_t(parse_integer(flag, value(), 0, INT32_MAX));
    else if (flag == "--top-p") a.gen.top_p = parse_float(flag, value(), kTopP);
    else if (flag == "--min-p") a.gen.min_p = parse_float(flag, value(), kMinP);
    else if (flag == "--repeat-penalty") a.gen.repeat_penalty =
        parse_float(flag, value(), kRepeatPenalty);
    else if (flag == "--repeat-last-n") a.gen.repeat_last_n = parse_u32(flag, value());
    else if (flag == "--seed") a.gen.seed = parse_u64(flag, value());
    else if (flag == "--ignore-eos") a.gen.ignore_eos = 1;
    else if (flag == "--stop") a.stop_strings.emplace_back(value());
    else if (flag == "--reply-prefix") a.reply_prefix = value();
    else if (flag == "--logit-bias") a.logit_bias.push_back(parse_logit_bias(value()));
    else if (flag == "--format") {
      a.gen.format = parse_format(value());
      a.format_given = true;
    }
    else if (flag == "--json-schema") a.json_schema = read_schema_file(value());
    else if (flag == "--threads") a.n_threads = int32_t(parse_integer(flag, value(), 0, 1024));
    else if (flag == "--device") a.device = value();
    else if (flag == "--kv") a.kv_type = parse_kv(value());
    else if (flag == "--ctx") a.context_length = parse_u32(flag, value());
    else if (flag == "--overflow") {
      a.overflow = parse_overflow(value());
      a.overflow_given = true;
    }
    else if (flag == "--print-ids") a.print_ids = true;
    else if (flag == "--store") a.store_path = value();
    else if (flag == "--session") a.session_id = parse_session_id(flag, value());
    else if (flag == "--idle-spill") a.idle_spill_ms = parse_u32(flag, value());
    else throw std::invalid_argument("unknown option '" + std::string(flag) + "' (see --help)");
  }
  if (!a.help && !a.version && a.model.empty()) {
    throw std::invalid_argument("no model given: use -m PATH (see --help)");
  }
  if (a.json_schema) {
    if (a.format_given && a.gen.format != PARLEY_FORMAT_JSON) {
      throw std::invalid_argument("--json-schema asks for JSON replies, but --format is text");
    }
    a.gen.format = PARLEY_FORMAT_JSON;
  }
  // Refused here rather than at every message of a console.
  check_generate_flags(a);
  // Without a store there is nowhere to spill to; say so rather than ignore the flag.
  if (a.idle_spill_ms > 0 && !a.store_path) {
    throw std::invalid_argument("--idle-spill needs --store FILE");
  }
  return a;
}

std::optional<std::string> logit_bias_problem(const CliArgs& args, uint32_t n_vocab) {
  size_t banned = 0;
  for (const auto& b : args.logit_bias) {
    if (uint32_t(b.token) >= n_vocab) {
      return "--logit-bias token " + std::to_string(b.token) + " is not in the model: ids are " +
             "below the vocabulary's " + std::to_string(n_vocab);
    }
    banned += std::isinf(b.bias) ? 1 : 0;  // only -inf gets past the parser
  }
  // The ids are distinct (check_generate_flags) and in the vocabulary: all of it when equal.
  if (n_vocab > 0 && banned == n_vocab) {
    return "--logit-bias bans every token of the vocabulary (" + std::to_string(n_vocab) +
           "): the model would have nothing to say";
  }
  return std::nullopt;
}

}  // namespace chat
