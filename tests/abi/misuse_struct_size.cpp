// Rows: struct_size of every caller-sized struct. Options: 0, only the size field, a size
// that ends inside a field, smaller than this version, larger with a non-zero tail, past
// PARLEY_MAX_STRUCT_SIZE -> all INVALID_ARGUMENT; larger with a zero tail -> accepted. Filled
// structs: too small or past PARLEY_MAX_STRUCT_SIZE -> INVALID_ARGUMENT; an earlier version's
// size (a program built against that header) -> filled up to that size and not a byte
// further; larger -> filled, with the tail set to zero. The
// *_init_sized entry points write exactly `size` bytes (none below sizeof(size_t)).
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "misuse_matrix.h"

namespace parley::test {
namespace {

constexpr parley_status kInvalid = PARLEY_E_INVALID_ARGUMENT;

// A struct with room behind it, as a newer header's bigger struct would have (up to the
// largest struct_size the library takes, and one byte more).
template <typename T>
struct Padded {
  T value;
  unsigned char tail[PARLEY_MAX_STRUCT_SIZE];
};

template <typename T>
Padded<T> padded(size_t size, unsigned char tail_byte) {
  Padded<T> p;
  std::memset(&p, 0, sizeof p);
  std::memset(p.tail, tail_byte, sizeof p.tail);
  p.value.struct_size = size;
  return p;
}

struct SizeCase {
  const char* what;
  size_t delta_or_size;
  bool absolute;        // delta_or_size is the size itself
  unsigned char tail;   // byte behind sizeof(T)
  parley_status expected;
};

const SizeCase kOptionSizes[] = {
    {"struct_size 0", 0, true, 0, kInvalid},
    {"only the struct_size field", sizeof(size_t), true, 0, kInvalid},
    {"ends inside the last field", size_t(-3), false, 0, kInvalid},
    {"one field short (an older header than exists)", size_t(-8), false, 0, kInvalid},
    {"larger, non-zero tail (a newer caller's field)", 8, false, 1, kInvalid},
    {"larger, zero tail", 8, false, 0, PARLEY_OK},
    {"much larger, zero tail", 64, false, 0, PARLEY_OK},
    {"PARLEY_MAX_STRUCT_SIZE, zero tail", PARLEY_MAX_STRUCT_SIZE, true, 0, PARLEY_OK},
    {"past PARLEY_MAX_STRUCT_SIZE (a field never set), zero tail", PARLEY_MAX_STRUCT_SIZE + 1,
     true, 0, kInvalid},
};

void init_defaults(parley_engine_options* o) { parley_engine_options_init(o); }
void init_defaults(parley_session_options* o) { parley_session_options_init(o); }
void init_defaults(parley_generate_options* o) { parley_generate_options_init(o); }

template <typename T>
size_t size_of(const SizeCase& c) {
  return c.absolute ? c.delta_or_size : sizeof(T) + c.delta_or_size;  // wraps for negatives
}

// Options rows: `use` makes the call with the prepared struct. A size that is an earlier
// version's (`earlier`: 0.11's generate options are one field short) has its own row.
template <typename T, typename Use>
void option_rows(MisuseRows& r, const char* fn, const char* name, Use use,
                 std::initializer_list<size_t> earlier = {}) {
  for (const SizeCase& c : kOptionSizes) {
    if (std::find(earlier.begin(), earlier.end(), size_of<T>(c)) != earlier.end()) continue;
    r.push_back({fn, std::string(name) + ": " + c.what, c.expected, [c, use](MisuseWorld& w) {
                   Padded<T> p = padded<T>(size_of<T>(c), 0);
                   // Defaults for the fields, keeping the size under test.
                   const size_t size = p.value.struct_size;
                   init_defaults(&p.value);
                   p.value.struct_size = size;
                   std::memset(p.tail, c.tail, sizeof p.tail);
                   return use(w, &p.value);
                 }});
  }
}

// Filled-struct rows.
template <typename T, typename Use>
void out_rows(MisuseRows& r, const char* fn, Use use) {
  const std::pair<const char*, size_t> refused[] = {
      {"struct_size 0", 0}, {"only the struct_size field", sizeof(size_t)},
      {"ends inside the last field", sizeof(T) - 3}, {"short of the last 4 bytes", sizeof(T) - 4},
      {"past PARLEY_MAX_STRUCT_SIZE (a field never set)", PARLEY_MAX_STRUCT_SIZE + 1}};
  for (const auto& [what, size] : refused) {
    r.push_back({fn, what, kInvalid, [size, use](MisuseWorld& w) {
                   Padded<T> p = padded<T>(size, 0xAB);
                   return use(w, &p.value);
                 }});
  }
  r.push_back({fn, "larger: filled, tail set to zero", PARLEY_OK, [use](MisuseWorld& w) {
                 Padded<T> p = padded<T>(sizeof(T) + 24, 0xAB);
                 const parley_status st = use(w, &p.value);
                 if (st != PARLEY_OK) return st;
                 for (size_t i = 0; i < 24; ++i) {
                   if (p.tail[i] != 0) return kRowCheckFailed;
                 }
                 return p.tail[24] == 0xAB && p.value.struct_size == sizeof(T) + 24
                            ? PARLEY_OK
                            : kRowCheckFailed;  // nothing past struct_size is touched
               }});
}

// A filled struct of an earlier version's size: accepted, and nothing past that size written.
// `written` checks a field the earlier version has.
template <typename T, typename Use, typename Written>
void earlier_size_row(MisuseRows& r, const char* fn, const char* what, size_t size, Use use,
                      Written written) {
  r.push_back({fn, what, PARLEY_OK, [size, use, written](MisuseWorld& w) {
                 Padded<T> p;
                 std::memset(&p, 0xAB, sizeof p);
                 p.value.struct_size = size;
                 const parley_status st = use(w, &p.value);
                 if (st != PARLEY_OK) return st;
                 const auto* bytes = reinterpret_cast<const unsigned char*>(&p);
                 for (size_t i = size; i < sizeof p; ++i) {
                   if (bytes[i] != 0xAB) return kRowCheckFailed;
                 }
                 return p.value.struct_size == size && written(p.value) ? PARLEY_OK
                                                                        : kRowCheckFailed;
               }});
}

// An options struct of an earlier version's size, garbage behind it: accepted, and nothing past
// that size read (the fields there take their defaults).
template <typename T, typename Use>
void earlier_options_row(MisuseRows& r, const char* fn, const char* what, size_t size, Use use) {
  r.push_back({fn, what, PARLEY_OK, [size, use](MisuseWorld& w) {
                 Padded<T> p;
                 init_defaults(&p.value);
                 auto* bytes = reinterpret_cast<unsigned char*>(&p);
                 std::memset(bytes + size, 0xAB, sizeof p - size);
                 p.value.struct_size = size;
                 return use(w, &p.value);
               }});
}

// init_sized rows: the bytes written are exactly the size given.
template <typename T>
void init_rows(MisuseRows& r, const char* fn, void (*init)(T*, size_t)) {
  const std::pair<const char*, size_t> sizes[] = {
      {"size 0 writes nothing", 0},
      {"size below sizeof(size_t) writes nothing", 4},
      {"half a struct: that many bytes", sizeof(T) / 2},
      {"larger: defaults, then zeros", sizeof(T) + 32}};
  for (const auto& [what, size] : sizes) {
    r.push_back({fn, what, PARLEY_OK,
                 [size, init](MisuseWorld&) {
                   Padded<T> p;
                   std::memset(&p, 0xCD, sizeof p);
                   init(&p.value, size);
                   const auto* bytes = reinterpret_cast<const unsigned char*>(&p);
                   if (size < sizeof(size_t)) {
                     for (size_t i = 0; i < sizeof p; ++i) {
                       if (bytes[i] != 0xCD) return kRowCheckFailed;
                     }
                     return PARLEY_OK;
                   }
                   if (p.value.struct_size != size) return kRowCheckFailed;
                   if (bytes[size] != 0xCD) return kRowCheckFailed;  // wrote past size
                   for (size_t i = sizeof(T); i < size; ++i) {
                     if (bytes[i] != 0) return kRowCheckFailed;
                   }
                   return PARLEY_OK;
                 },
                 false});
  }
}

}  // namespace

MisuseRows struct_size_rows() {
  MisuseRows r;
  const auto open_with = [](MisuseWorld& w, parley_engine_options* o) {
    o->model_path = w.model().c_str();
    o->n_threads = 1;
    parley_engine* e = nullptr;
    const parley_status st = parley_engine_open(o, &e);
    parley_engine_close(e);
    return st;
  };
  option_rows<parley_engine_options>(r, "parley_engine_open", "engine options", open_with);
  // 0.9's struct ended before the load progress callback.
  earlier_options_row<parley_engine_options>(
      r, "parley_engine_open", "engine options: 0.9's size, garbage behind it",
      offsetof(parley_engine_options, on_load_progress), open_with);
  option_rows<parley_session_options>(
      r, "parley_session_create", "session options",
      [](MisuseWorld& w, parley_session_options* o) {
        parley_session* s = nullptr;
        const parley_status st = parley_session_create(w.engine(), o, &s);
        parley_session_close(s);
        return st;
      });
  const auto send_with = [](MisuseWorld& w, parley_generate_options* o) {
    o->max_tokens = 2;
    o->temperature = 0;
    return parley_session_send(w.session(), "a", o, nullptr, nullptr, nullptr);
  };
  option_rows<parley_generate_options>(r, "parley_session_send", "generate options", send_with,
                                       {offsetof(parley_generate_options, json_schema)});
  // 0.2's struct ended before the stop strings.
  earlier_options_row<parley_generate_options>(
      r, "parley_session_send", "generate options: 0.2's size, garbage behind it",
      offsetof(parley_generate_options, stop), send_with);
  // 0.3's struct ended before the logit biases.
  earlier_options_row<parley_generate_options>(
      r, "parley_session_send", "generate options: 0.3's size, garbage behind it",
      offsetof(parley_generate_options, logit_bias), send_with);
  // 0.4 - 0.11's struct ended before the JSON schema.
  earlier_options_row<parley_generate_options>(
      r, "parley_session_send", "generate options: 0.11's size, garbage behind it",
      offsetof(parley_generate_options, json_schema), send_with);

  const auto get_stats = [](MisuseWorld& w, parley_engine_stats* s) {
    return parley_engine_get_stats(w.engine(), s);
  };
  out_rows<parley_engine_stats>(r, "parley_engine_get_stats", get_stats);
  // 0.1's struct ended before decode_steps.
  earlier_size_row<parley_engine_stats>(
      r, "parley_engine_get_stats", "0.1's size: filled up to it, nothing past it",
      offsetof(parley_engine_stats, decode_steps), get_stats,
      [](const parley_engine_stats& s) { return s.kv_bytes_per_token > 0 && s.store_bytes == 0; });
  out_rows<parley_model_info>(r, "parley_engine_get_model_info",
                              [](MisuseWorld& w, parley_model_info* m) {
                                return parley_engine_get_model_info(w.engine(), m);
                              });
  out_rows<parley_session_info>(r, "parley_session_get_info",
                                [](MisuseWorld& w, parley_session_info* i) {
                                  return parley_session_get_info(w.session(), i);
                                });
  out_rows<parley_stored_session_info>(
      r, "parley_store_get_session_info", [](MisuseWorld& w, parley_stored_session_info* i) {
        // A stored session to describe: created on the first row, reopened on later ones.
        parley_engine* e = w.engine_with_store();
        parley_session* s = nullptr;
        if (parley_session_open(e, "listed", &s) != PARLEY_OK) {
          parley_session_options o;
          parley_session_options_init(&o);
          o.id = "listed";
          const parley_status st = parley_session_create(e, &o, &s);
          if (st != PARLEY_OK) return st;
        }
        parley_session_close(s);
        return parley_store_get_session_info(e, "listed", i);
      });
  out_rows<parley_turn>(r, "parley_session_get_turn", [](MisuseWorld& w, parley_turn* t) {
    return parley_session_get_turn(w.session_with_turn(), 0, t);
  });
  const auto send_for_stats = [](MisuseWorld& w, parley_turn_stats* t) {
    const parley_generate_options g = quick_generate();
    return parley_session_send(w.session(), "a", &g, nullptr, nullptr, t);
  };
  out_rows<parley_turn_stats>(r, "parley_session_send", send_for_stats);
  const auto continue_with = [](MisuseWorld& w, parley_generate_options* o) {
    o->max_tokens = 2;
    o->temperature = 0;
    return parley_session_continue(w.session_with_turn(), o, nullptr, nullptr, nullptr);
  };
  option_rows<parley_generate_options>(r, "parley_session_continue", "generate options",
                                       continue_with,
                                       {offsetof(parley_generate_options, json_schema)});
  out_rows<parley_turn_stats>(r, "parley_session_continue",
                              [](MisuseWorld& w, parley_turn_stats* t) {
                                const parley_generate_options g = quick_generate();
                                return parley_session_continue(w.session_with_turn(), &g,
                                                               nullptr, nullptr, t);
                              });
  out_rows<parley_turn_stats>(r, "parley_session_prepare",
                              [](MisuseWorld& w, parley_turn_stats* t) {
                                return parley_session_prepare(w.session_with_turn(), t);
                              });
  // 0.2's struct ended before stop_reason.
  earlier_size_row<parley_turn_stats>(
      r, "parley_session_send", "turn stats: 0.2's size: filled up to it, nothing past it",
      offsetof(parley_turn_stats, stop_reason), send_for_stats,
      [](const parley_turn_stats& t) { return t.generated_tokens > 0 && t.reserved0 == 0; });

  init_rows<parley_engine_options>(r, "parley_engine_options_init_sized",
                                   parley_engine_options_init_sized);
  init_rows<parley_session_options>(r, "parley_session_options_init_sized",
                                    parley_session_options_init_sized);
  init_rows<parley_generate_options>(r, "parley_generate_options_init_sized",
                                     parley_generate_options_init_sized);
  return r;
}

}  // namespace parley::test
