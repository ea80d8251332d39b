/*
 * parley.h — the C ABI of Parley, an embeddable on-device chat engine.
 *
 * If a function, structure, type or constant does not appear in this file, it is not part of
 * Parley's published API.
 *
 * Conventions (they hold for every declaration below):
 * - Every fallible call returns a parley_status; results go through out-pointers, which come
 *   last. On failure an out-handle is set to NULL, and parley_last_error() holds a message.
 * - Options and filled structs start with `size_t struct_size`, set by the CALLER to the size
 *   it was compiled with (the *_init macros do that). The library reads or writes only that many
 *   bytes; a newer caller's extra fields must be zero. Fields are only ever appended (each
 *   says "since" when it came after 0.1), and a program built against an earlier version keeps
 *   working: its smaller struct_size is honoured, the fields it lacks taking their defaults in
 *   options and left unwritten in filled structs. A struct_size that no version had (0
 *   included, and since 0.9 any above PARLEY_MAX_STRUCT_SIZE: a field never set) is
 *   INVALID_ARGUMENT; so is a non-zero byte past this version's fields in options. In a
 *   struct the library fills, the bytes past this version's fields (up to struct_size) are
 *   set to zero.
 * - Strings are UTF-8 and NUL-terminated unless a length is given.
 * - Buffers: a call writes at most `cap` elements (a string is NUL-terminated within `cap`),
 *   sets `*needed` to the full size (a string's includes its NUL) and returns PARLEY_OK even
 *   when it had to cut; `cap = 0` asks for the size (the buffer may then be NULL; a NULL
 *   buffer with cap > 0 is INVALID_ARGUMENT).
 * - Handles are opaque. Whoever creates a handle closes it; closing NULL is a no-op. Using a
 *   handle after closing it returns PARLEY_E_MISUSE, and closing it again is a no-op; so is
 *   passing an engine where a session is expected (or the reverse) or a pointer that never
 *   was a handle. A NULL handle is INVALID_ARGUMENT. The address of a closed handle may be
 *   given to a handle created later, so keep no closed handle around.
 * - Threads: an engine may be used from any thread. A session is used by one thread at a
 *   time: a second concurrent call on it returns PARLEY_E_BUSY (also from inside its own
 *   callback); only parley_session_interrupt() may be called at any time from any thread.
 *   On the CPU, sessions that generate at the same time from different threads share their
 *   decode steps (the weights are read once for all of them), and each reply is still, bit
 *   for bit, the one it would be alone.
 * - No C++ exception ever crosses this interface. Any call that allocates memory may return
 *   PARLEY_E_OUT_OF_MEMORY when an allocation fails (SQLite's own included), also where its
 *   Errors line does not say so; the objects involved stay usable, and a failed open leaves
 *   the store file as it was.
 */
#ifndef PARLEY_H
#define PARLEY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Export macro ------------------------------------------------------------------------ */

#if defined(_WIN32) && !defined(PARLEY_STATIC)
#  ifdef PARLEY_BUILD
#    define PARLEY_API __declspec(dllexport)
#  else
#    define PARLEY_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define PARLEY_API __attribute__((visibility("default")))
#else
#  define PARLEY_API
#endif

#ifdef PARLEY_DISABLE_DEPRECATE_WARNINGS
#  define PARLEY_DEPRECATED(msg)
#elif defined(__GNUC__)
#  define PARLEY_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#  define PARLEY_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#  define PARLEY_DEPRECATED(msg)
#endif

/* ---- Version ----------------------------------------------------------------------------- */

/* Compatibility: a program built against MAJOR.MINOR runs with any later MINOR of the same
 * MAJOR (same SONAME, libparley.so.MAJOR). Within a major version the ABI only grows: new
 * functions, new fields appended to structs (which are caller-sized, see struct_size), new
 * status codes and constants; nothing is removed, renamed, reordered or renumbered, and no
 * signature changes. A new major version may remove or change anything. A deprecated symbol
 * (PARLEY_DEPRECATED) stays exported and working until the next major version. */

#define PARLEY_VERSION_MAJOR 0
#define PARLEY_VERSION_MINOR 12
#define PARLEY_VERSION_PATCH 0
#define PARLEY_VERSION_NUMBER \
  (PARLEY_VERSION_MAJOR * 10000 + PARLEY_VERSION_MINOR * 100 + PARLEY_VERSION_PATCH)

/** The library's version as "MAJOR.MINOR.PATCH".
 *  Ownership: static storage. Thread-safety: any thread. Since: 0.1. */
PARLEY_API const char *parley_version(void);

/** The library's version as MAJOR*10000 + MINOR*100 + PATCH; compare with
 *  PARLEY_VERSION_NUMBER to catch a header/library mismatch.
 *  Thread-safety: any thread. Since: 0.1. */
PARLEY_API uint32_t parley_version_number(void);

/* ---- Status codes (values are stable; new ones may be added) ----------------------------- */

typedef int32_t parley_status;
#define PARLEY_OK                  0  /* Success */
#define PARLEY_E_INVALID_ARGUMENT  1  /* A NULL, out-of-range or malformed argument */
#define PARLEY_E_NOT_FOUND         2  /* A file, session id or token that does not exist */
#define PARLEY_E_IO                3  /* Reading or mapping a file failed */
#define PARLEY_E_BAD_MODEL         4  /* The model file or directory is malformed */
#define PARLEY_E_UNSUPPORTED       5  /* A valid request this build or version cannot serve */
#define PARLEY_E_OUT_OF_MEMORY     6  /* An allocation failed */
#define PARLEY_E_CONTEXT_FULL      7  /* The conversation does not fit the context window */
#define PARLEY_E_BUSY              8  /* The session is in use by another call */
#define PARLEY_E_CANCELLED         9  /* Stopped by parley_session_interrupt() or a callback */
#define PARLEY_E_CORRUPT          10  /* Stored data failed its checks */
#define PARLEY_E_MODEL_MISMATCH   11  /* Stored data belongs to another model */
#define PARLEY_E_STORAGE          12  /* The session store failed (disk full, locked, I/O) */
#define PARLEY_E_BACKEND          13  /* The compute device failed */
#define PARLEY_E_INTERNAL         14  /* A bug in Parley; the message says where */
#define PARLEY_E_MISUSE           15  /* A closed or foreign handle */

/** The name of a status code, e.g. "PARLEY_E_BUSY"; "PARLEY_E_UNKNOWN" for other values.
 *  Does not change parley_last_error().
 *  Ownership: static storage. Thread-safety: any thread. Since: 0.1. */
PARLEY_API const char *parley_status_name(parley_status s);

/** A human-readable message for the last failed call on this thread; "" when none. It is
 *  valid UTF-8 on one line: an id it names is quoted, with invalid UTF-8 bytes and control
 *  characters as \xNN and cut after 64 characters with "..." (since 0.8.2); other text it
 *  quotes (a path, a template name, what a parser read) shows them as \xNN too (since 0.9),
 *  and the line and paragraph separators U+2028 and U+2029 as well (since 0.9.3).
 *  Ownership: owned by the library; valid until the next failing Parley call on this thread.
 *  Thread-safety: thread-local. Since: 0.1. */
PARLEY_API const char *parley_last_error(void);

/* ---- Constants (0 is always the default, so a zeroed struct means "defaults") ------------ */

#define PARLEY_KV_DEFAULT 0 /* = PARLEY_KV_INT8 */
#define PARLEY_KV_INT8    1 /* per token and KV head symmetric scale; 4x smaller than F32 */
#define PARLEY_KV_F16     2 /* reference type for quality checks */
#define PARLEY_KV_F32     3 /* reference type for exact checks */

#define PARLEY_OVERFLOW_ERROR       0 /* a turn that does not fit returns PARLEY_E_CONTEXT_FULL */
#define PARLEY_OVERFLOW_DROP_OLDEST 1 /* drop the oldest turns, keep the system prompt */

#define PARLEY_KV_SOURCE_NEW      0 /* the session had no KV before this turn */
#define PARLEY_KV_SOURCE_RESIDENT 1 /* KV was in memory */
#define PARLEY_KV_SOURCE_RESTORED 2 /* KV was read back from the store */
#define PARLEY_KV_SOURCE_REBUILT  3 /* KV was recomputed from the conversation's tokens, all
                                        of it or the part the store's did not cover: the
                                        store's was missing, damaged or another model's, or
                                        of the conversation before parley_session_rewind()
                                        or parley_session_set_system_prompt() changed it, or
                                        the conversation was rebuilt (DROP_OLDEST) */

/* Limits on parley_generate_options.stop (since 0.3) */
#define PARLEY_MAX_STOP_STRINGS 16  /* strings */
#define PARLEY_MAX_STOP_BYTES   256 /* bytes of one string */

/* The largest struct_size of any version's options or filled struct (since 0.9): a larger
 * one is INVALID_ARGUMENT, as an unset field's garbage would be. */
#define PARLEY_MAX_STRUCT_SIZE 4096

/* Why a reply ended (parley_turn_stats.stop_reason, since 0.3) */
#define PARLEY_STOP_END_TOKEN     1 /* the model ended it: EOS, the template's end of turn,
                                        another end id the model's files name, or with "raw"
                                        BOS (which starts another text). A Hugging Face
                                        model's EOS is config.json's eos_token_id; every id
                                        of its list and of generation_config.json's ends a
                                        reply, as GGUF eot/eom_token_id do */
#define PARLEY_STOP_MAX_TOKENS    2 /* it reached max_tokens */
#define PARLEY_STOP_STRING        3 /* it showed a stop string (stop_index says which) */
#define PARLEY_STOP_CONTEXT_END   4 /* it reached the end of the context */
#define PARLEY_STOP_CANCELLED     5 /* parley_session_interrupt() or the text callback */
#define PARLEY_STOP_OUT_OF_MEMORY 6 /* the KV budget ran out */
#define PARLEY_STOP_FORMAT_END    7 /* since 0.11: it is whole in its format (PARLEY_FORMAT_JSON:
                                        the object closed) */

/* What a reply must be (parley_generate_options.format, since 0.11) */
#define PARLEY_FORMAT_TEXT 0 /* any text */
#define PARLEY_FORMAT_JSON 1 /* one JSON object (RFC 8259), ending where it closes */

#define PARLEY_SESSION_ACTIVE  0
#define PARLEY_SESSION_IDLE    1
#define PARLEY_SESSION_SPILLED 2

/* parley_session_score_replies() (since 0.5) */
#define PARLEY_SCORE_WITH_END     1u  /* flag: score the end of each reply too */
#define PARLEY_MAX_SCORED_REPLIES 256 /* replies one call scores */

#define PARLEY_ROLE_SYSTEM    0
#define PARLEY_ROLE_USER      1
#define PARLEY_ROLE_ASSISTANT 2

#define PARLEY_LOG_ERROR 0
#define PARLEY_LOG_WARN  1
#define PARLEY_LOG_INFO  2
#define PARLEY_LOG_DEBUG 3

/* ---- Handles ----------------------------------------------------------------------------- */

typedef struct parley_engine parley_engine;   /* a loaded model, its backend and its sessions */
typedef struct parley_session parley_session; /* one conversation */

/* ---- Logging ----------------------------------------------------------------------------- */

/** Receives the library's log lines; `level` is a PARLEY_LOG_* value.
 *  Called on the thread that logs: the caller's, or for lines of the library's own threads
 *  (the idle spiller) a thread made for that one call, which ends as it returns (runtimes
 *  such as Mono and Unity adopt a thread that calls into them and wait for it at exit, so
 *  they never hold one of the library's). It must not call back into Parley, nor wait for a
 *  thread that may be in a Parley call which waits for the call that logs: an open of a
 *  session waits for its close, and closing an engine (or its last session) waits for the
 *  idle spiller's line. The idle spiller holds no session while its line is logged (since
 *  0.9.5; before, a call on the session it named waited for the callback). */
typedef void (*parley_log_fn)(int level, const char *msg, void *user);

/** Installs the log callback (NULL restores the default: warnings and errors to stderr).
 *  @param[in] fn    the callback, or NULL
 *  @param[in] user  passed back to every call of fn
 *  Thread-safety: any thread, at any time: a line logged meanwhile reaches the callback before
 *  or the one after (each call keeps a few bytes for the life of the process). Since: 0.1. */
PARLEY_API void parley_set_log_callback(parley_log_fn fn, void *user);

/* ---- Engine ------------------------------------------------------------------------------ */

/** Receives how far parley_engine_open() has come (parley_engine_options.on_load_progress,
 *  since 0.10): for a loading screen, or to give up a long load. Called on the thread that
 *  calls parley_engine_open(): first with 0; then as the model's weights are converted and
 *  taken by the backend, in proportion to their bytes (on the CPU as each layer's weights are
 *  copied, on a GPU as each layer reaches the device); last with exactly 1, once the engine is
 *  ready, its store opened. `fraction` never decreases, and only the last
 *  report is 1. Return 0 to go on, non-zero to stop: the open then returns PARLEY_E_CANCELLED
 *  and lets go of everything it took, also when stopped at 1. Other engines and their
 *  sessions may be used from here. */
typedef int (*parley_progress_fn)(float fraction, void *user);

typedef struct parley_engine_options {
  size_t      struct_size;     /* sizeof(parley_engine_options) as the caller compiled it */
  const char *model_path;      /* GGUF file or Hugging Face model directory (required) */
  const char *store_path;      /* SQLite file holding every conversation (created when
                                  missing; not ":memory:"); NULL = sessions kept in memory
                                  only */
  const char *device;          /* NULL, "" or "auto" (default), "cpu", "cuda", "cuda:N" */
  int32_t     n_threads;       /* CPU threads; 0 = one per core; at most 1024 */
  int32_t     kv_type;         /* PARLEY_KV_DEFAULT (= INT8), _INT8, _F16, _F32 */
  uint64_t    kv_budget_bytes; /* resident KV budget; 0 = automatic: a quarter of the memory
                                  the process may use (since 0.10, of its memory cgroup's
                                  limit where that is lower than the machine's, and at most
                                  three quarters of what is left once the model is loaded;
                                  at least one block). A send
                                  that needs more takes cached prefix blocks no session uses
                                  first (least recently used: free to drop), then, with a
                                  store, spills
                                  the other sessions not in use, least recently used first.
                                  A spill the store refuses (a full disk) is not tried again
                                  by that call; when no room comes, the call is OUT_OF_MEMORY
                                  and its message names the session and the store's error
                                  (since 0.8.5) */
  uint32_t    idle_spill_ms;   /* with a store: spill sessions idle this long to it, freeing
                                  their KV memory (full blocks stay cached until the budget
                                  needs them, as parley_session_suspend says); 0 = only
                                  under budget pressure. Spills the store refuses (a full
                                  disk) are tried again after twice as long each time, up
                                  to a minute (since 0.8.3) */
  uint32_t    context_length;  /* 0 = the model's; larger than the model's is
                                  INVALID_ARGUMENT */
  /* Since 0.10. */
  parley_progress_fn on_load_progress;  /* NULL = no reports */
  void       *load_progress_user;       /* passed to on_load_progress */
} parley_engine_options;

/** Fills `o` with defaults. Use the macro parley_engine_options_init(o), which passes the
 *  caller's sizeof. Writes exactly `size` bytes (defaults, zeros past this version's fields)
 *  and sets struct_size to `size`; NULL or a size below sizeof(size_t) is a no-op. The same
 *  holds for every *_options_init_sized. Since: 0.1. */
PARLEY_API void parley_engine_options_init_sized(parley_engine_options *o, size_t size);
#define parley_engine_options_init(o) parley_engine_options_init_sized((o), sizeof *(o))

/** Loads a model and starts a backend. GGUF weights may be F32, F16, BF16, Q8_0, Q4_0, Q4_1,
 *  Q5_1, Q5_0 (held as Q5_1, exactly), Q4_K and Q5_K (held as Q4_1 and Q5_1, their scales and
 *  minimums rounded to F16) or Q6_K (re-quantized to Q8_0, each weight moved by at most half a
 *  Q8_0 step); Hugging Face weights F32, F16 or BF16.
 *  @param[in]  o    options; model_path is required
 *  @param[out] out  the engine, or NULL on failure
 *  Ownership: close with parley_engine_close(). The engine and its sessions belong to this
 *  process: see parley_engine_close() for fork().
 *  Errors: INVALID_ARGUMENT (NULL, bad struct_size, unknown non-zero fields, bad device or kv_type,
 *  a store_path of "" or ":memory:", a context_length larger than the model's, a kv_budget_bytes
 *  too small for one KV block), CANCELLED (on_load_progress asked to stop; since 0.10), NOT_FOUND /
 *  IO (model path), BAD_MODEL (the message names the offending field), UNSUPPORTED (architecture,
 *  tensor type), BACKEND ("cuda" or "cuda:N" when the CUDA module libparley_cuda.so cannot be
 *  loaded or that device is absent; the message says which), STORAGE (the store file cannot be
 *  opened or created), CORRUPT (store_path is not a Parley store, or one from a newer, incompatible
 *  version), OUT_OF_MEMORY (since 0.10 also before the weights are converted or copied, when they
 *  would need more memory than the process can get, the machine's available memory and swap or its
 *  memory cgroup's limit, which an overcommitting kernel would answer by ending the process: the
 *  message gives both sizes; the environment variable PARLEY_MEMORY_CHECK=0 skips this check).
 *  A store that fails its integrity check is never deleted: what can be read is copied into a new
 *  file beside it, which then takes its place as it is renamed aside, and a warning names what was
 *  lost. Until then the damaged file stays as it is (since 0.8.4): a recovery cut short (a crash, a
 *  full disk) is done again at the next open, and an engine opening the store meanwhile, in any
 *  process, waits for the copy and never sees part of it. One cut short once the copy was whole, as
 *  the files swapped, is finished by the next open, which puts the copy in place (since 0.9.3;
 *  before, that open could begin an empty store). While an engine is open, its store file, and the
 *  -wal and -shm files SQLite keeps beside it (since 0.8.4), must stay where they are: once one is
 *  moved, replaced or deleted (another process's recovery renames a damaged file aside), every
 *  commit fails with STORAGE saying so, and the turns stay in memory (since 0.8.2; before, they
 *  went on into the moved or deleted file).
 *  Thread-safety: any thread. Since: 0.1. */
PARLEY_API parley_status parley_engine_open(const parley_engine_options *o, parley_engine **out);

/** Closes an engine. With a store, the KV of every open session is spilled to it first, but
 *  for a session in a call at that moment (the caller's own callback's included): its KV
 *  stays in memory until it is spilled later (its close spills it), and its turns are
 *  stored as they end. Sessions still open stay usable; the engine is freed when the last
 *  of them closes. NULL is a no-op.
 *  fork(): an engine and its sessions belong to the process that opened them (since 0.8.5;
 *  before, a child that closed them could hang or write the parent's sessions to the store).
 *  In a child, every call on an inherited engine or session returns MISUSE ("this engine was
 *  opened by process N; after fork() a child opens its own engine"), and closing one returns
 *  at once, changing nothing: its threads, store connection and memory are the parent's, and
 *  the child's copy is left as it is. The child may open an engine of its own, also on the
 *  same store file. The parent goes on unaffected.
 *  dlclose(): the library is never unloaded once loaded (since 0.8.5): its threads run for as
 *  long as an engine or session is open, so a plugin host's dlclose leaves it in place, and a
 *  later dlopen finds the same library, its engines and log handler as they were.
 *  Thread-safety: any thread, but not concurrently with other calls on this engine. Since: 0.1. */
PARLEY_API void parley_engine_close(parley_engine *e);

typedef struct parley_engine_stats {
  size_t   struct_size;
  uint32_t sessions_active;     /* open sessions not spilled nor idle (KV, if any, in memory) */
  uint32_t sessions_idle;       /* ... idle for idle_spill_ms or more: about to be spilled
                                   (one holding no KV, never sent to, stays idle: it has
                                   nothing to spill) */
  uint32_t sessions_spilled;    /* open sessions whose KV is in the store only */
  uint32_t reserved0;
  uint64_t kv_blocks_total;     /* KV blocks (16 tokens x all layers) the budget allows */
  uint64_t kv_blocks_used;      /* blocks held by sessions */
  uint64_t kv_blocks_shared;    /* blocks held by two or more sessions (a shared prefix) */
  uint64_t kv_blocks_cached;    /* prefix blocks no session holds, kept for the next hit */
  uint64_t kv_bytes_per_token;  /* 2 x layers x kv_heads x head_dim x bytes, plus scales */
  uint64_t kv_bytes_resident;   /* bytes of the used and cached blocks */
  uint64_t kv_budget_bytes;     /* the resident KV budget in force */
  uint64_t prefix_hits;         /* blocks found in the prefix cache */
  uint64_t prefix_misses;       /* lookups that found none */
  uint64_t store_bytes;         /* size of the store file; 0 without a store (since 0.8.3
                                   its -wal file beside it is checkpointed at 1 MiB and cut
                                   back to 4 MiB: a large spill grows it only for a while) */
  uint64_t decode_steps;        /* since 0.2: decode steps run; sessions generating at the
                                   same time share them (see Threads above) */
  uint64_t decode_tokens;       /* since 0.2: tokens those steps computed; decode_tokens /
                                   decode_steps is the mean number of sessions per step */
} parley_engine_stats;

/** Engine-wide counters.
 *  @param[out] out  caller sets out->struct_size; the library fills that many bytes
 *  Errors: INVALID_ARGUMENT, MISUSE. Thread-safety: any thread. Since: 0.1. */
PARLEY_API parley_status parley_engine_get_stats(parley_engine *e, parley_engine_stats *out);

typedef struct parley_model_info {
  size_t   struct_size;
  char     name[128];           /* general.name or the directory's name; NUL-terminated,
                                   a longer one cut at a UTF-8 character boundary */
  char     architecture[32];    /* "llama" */
  char     chat_template[32];   /* the template used when a session names none: "raw", ... */
  uint32_t n_vocab;
  uint32_t n_layers;
  uint32_t n_heads;
  uint32_t n_kv_heads;
  uint32_t head_dim;
  uint32_t embedding_length;
  uint32_t context_length;      /* the context in force (engine option or the model's) */
  uint32_t reserved0;
  uint64_t n_params;
  char     backend[32];         /* "cpu", "cuda:0", ... */
} parley_model_info;

/** What the engine has loaded.
 *  @param[out] out  caller sets out->struct_size; the library fills that many bytes
 *  Errors: INVALID_ARGUMENT, MISUSE. Thread-safety: any thread. Since: 0.1. */
PARLEY_API parley_status parley_engine_get_model_info(parley_engine *e, parley_model_info *out);

/* ---- Sessions ---------------------------------------------------------------------------- */

typedef struct parley_session_options {
  size_t      struct_size;
  const char *id;            /* NULL = generate one; at most 127 bytes of UTF-8 */
  const char *system_prompt; /* NULL = none */
  const char *chat_template; /* NULL = the model's; or "raw", "llama2", "chatml", "zephyr",
                                "mistral" — this option wins over the model's */
  const char *cache_scope;   /* prefix KV is shared only among sessions of one scope; NULL = "" */
  int32_t     overflow;      /* PARLEY_OVERFLOW_ERROR (default): a message that does not fit
                                is CONTEXT_FULL; _DROP_OLDEST: the oldest exchanges are dropped
                                (the system prompt stays) and the conversation is rebuilt;
                                since 0.8.1 as many as the reply's max_tokens need too, when
                                dropping can make that room (else as the message needs) */
  int32_t     reserved0;     /* keeps the size a multiple of 8 with no hidden padding */
} parley_session_options;

/** Fills `o` with defaults; use the macro parley_session_options_init(o). Since: 0.1. */
PARLEY_API void parley_session_options_init_sized(parley_session_options *o, size_t size);
#define parley_session_options_init(o) parley_session_options_init_sized((o), sizeof *(o))

/** Starts a new conversation.
 *  @param[in]  e    the engine
 *  @param[in]  o    options, or NULL for defaults
 *  @param[out] out  the session, or NULL on failure
 *  Ownership: close with parley_session_close(); it keeps the engine alive.
 *  Errors: INVALID_ARGUMENT (bad options, unknown template, an id in use, longer than 127
 *  bytes or with control characters, invalid UTF-8 in the id, system prompt or cache scope),
 *  CONTEXT_FULL (the system prompt alone does not fit), STORAGE (with a store: it could not
 *  store the new conversation; nothing is created), MISUSE.
 *  Thread-safety: any thread. Since: 0.1. */
PARLEY_API parley_status parley_session_create(parley_engine *e, const parley_session_options *o,
                                               parley_session **out);

/** Reopens a stored conversation, also in a new process: its KV comes back from the store on
 *  the next send (kv_source RESTORED), or is recomputed from the stored tokens when it is
 *  missing, damaged or from another model or KV type (kv_source REBUILT). A damaged block,
 *  once recomputed, is stored again by the session's next spill (or close), so the sessions
 *  that share it restore it from then on.
 *  @param[out] out  the session, or NULL on failure
 *  Errors: INVALID_ARGUMENT (NULL or empty id; the session is already open), NOT_FOUND (no
 *  store, or no such session, including ids no session can have: too long, invalid UTF-8),
 *  CORRUPT (its transcript cannot be read), MODEL_MISMATCH (since 0.8.2: it was started with
 *  another model and holds tokens this model's vocabulary lacks; before, CORRUPT), CONTEXT_FULL
 *  (since 0.8: the conversation is longer than this engine's context_length; since 0.9.3 also
 *  when its opening (BOS, the template's markers and the system prompt) and a reply's first
 *  token are, as parley_session_create() refuses; an engine whose context holds it opens it,
 *  and nothing is changed; before, CORRUPT), STORAGE, MISUSE.
 *  Thread-safety: any thread. While another thread is closing a session of this id on the same
 *  engine, this waits until the close has stored it, and then reopens what it stored (since
 *  0.8.5; before, it could read the store before the close's spill). Since: 0.1. */
PARLEY_API parley_status parley_session_open(parley_engine *e, const char *id,
                                             parley_session **out);

/** Copies a conversation into a new session, which then goes its own way. The copy shares the
 *  KV of every full block with the original (copy-on-write), so a fork is cheap.
 *  @param[in]  new_id  the copy's id, or NULL to generate one
 *  @param[out] out     the copy, or NULL on failure
 *  Ownership: close the copy with parley_session_close().
 *  Errors: INVALID_ARGUMENT (bad or used id), OUT_OF_MEMORY (the KV budget has no block for
 *  the copy of a partly filled last block even after spilling idle sessions, as a send does,
 *  since 0.8.4; since 0.8.5 also when a spill the store refused was the way to make room),
 *  STORAGE (with a store: it could not store the copy; nothing is created), BUSY, MISUSE.
 *  Thread-safety: one thread per session. Since: 0.1. */
PARLEY_API parley_status parley_session_fork(parley_session *s, const char *new_id,
                                             parley_session **out);

/** Moves a session's KV to the store and frees its memory; the next send brings it back.
 *  Its full blocks, like every prefix block no session holds, stay cached (kv_blocks_cached)
 *  until the KV budget needs them, and the next send takes those it still finds there
 *  instead of reading them from the store. A turn the store refused before (a send's
 *  STORAGE) is committed first. A session that holds no KV (nothing computed yet) has
 *  nothing to move: it stays ACTIVE (or IDLE).
 *  Errors: UNSUPPORTED (the engine has no store), STORAGE (the KV stays in memory), BUSY,
 *  MISUSE. Thread-safety: one thread per session. Since: 0.1. */
PARLEY_API parley_status parley_session_suspend(parley_session *s);

/** Asks the running parley_session_send() on `s` to stop at the next token (while a long
 *  message is still being read: after the chunk of it in progress); the send then returns
 *  PARLEY_E_CANCELLED and keeps the message and the partial reply, perhaps empty, as the turn.
 *  A no-op when nothing runs.
 *  Errors: MISUSE. Thread-safety: any thread, at any time. Since: 0.1. */
PARLEY_API parley_status parley_session_interrupt(parley_session *s);

/** Drops the last n_turns messages of the conversation (a user message and its reply are two;
 *  the system prompt stays) and frees their KV, in the store too. Rewinding to right after a
 *  user message leaves that message with an empty reply (a message of its own in the
 *  transcript from the next turn on).
 *  Errors: INVALID_ARGUMENT (more turns than the conversation has), STORAGE (nothing changed),
 *  BUSY, MISUSE.
 *  Thread-safety: one thread per session. Since: 0.1. */
PARLEY_API parley_status parley_session_rewind(parley_session *s, uint32_t n_turns);

/** Changes what happens when a message does not fit the context (PARLEY_OVERFLOW_*), which
 *  parley_session_options.overflow set at creation and the store keeps: a reopened or imported
 *  conversation that is to run on past the context may then drop its oldest exchanges.
 *  Nothing is dropped now; the next message that does not fit decides. With a store, the
 *  policy is committed before this returns (with the stored updated_unix_ms, since 0.8.2),
 *  and a reopened session has it.
 *  Errors: INVALID_ARGUMENT (not a PARLEY_OVERFLOW_* value), STORAGE (nothing changed; also
 *  when another engine on the same store file deleted the conversation, or deleted it and
 *  started another under its id; turns it added do not matter to the policy), BUSY, MISUSE.
 *  The policy the session already has is a no-op: PARLEY_OK, and the store is not read.
 *  Thread-safety: one thread per session. Since: 0.8. */
PARLEY_API parley_status parley_session_set_overflow(parley_session *s, int32_t overflow);

/** Lets the conversation go on under a new system prompt: a character whose situation
 *  changed ("The player has stolen your sword."), a tone to change. Every message is kept; the
 *  next reply reads them after the new prompt, as if it had been there from the start. The
 *  system message (turn 0) is changed, added when there was none, or removed by NULL or "";
 *  the turn numbers of parley_session_get_turn() move by one when it comes or goes. With a
 *  store, the change is committed (synchronous=FULL) before this returns, and a reopened
 *  session has it.
 *  Cost: the conversation's KV is computed again by the next turn, or ahead of it by
 *  parley_session_prepare() (sessions of the same cache_scope with the same opening share
 *  it). Setting the prompt the session already has costs nothing.
 *  @param[in] system_prompt  UTF-8 text, or NULL or "" for none
 *  When the conversation with this prompt would not fit the context with room for a reply,
 *  the session's overflow policy decides, as for a message: ERROR refuses it (CONTEXT_FULL),
 *  DROP_OLDEST drops the oldest exchanges (never the last user message) and stores that.
 *  Errors: INVALID_ARGUMENT (invalid UTF-8), CONTEXT_FULL (it does not fit: see above),
 *  STORAGE, BUSY, MISUSE; after an error nothing has changed.
 *  Thread-safety: one thread per session. Since: 0.6. */
PARLEY_API parley_status parley_session_set_system_prompt(parley_session *s,
                                                          const char *system_prompt);

/** Closes a session. With a store its KV is spilled first, so reopening it is instant; turns
 *  the store refused before (a send's STORAGE) are committed first, and if the store refuses
 *  them again they are lost (a warning is logged): to keep them, call parley_session_suspend()
 *  first and, while it returns STORAGE, save parley_session_export()'s JSON. NULL is
 *  a no-op. If a send (or another call that parley_session_interrupt() stops) is running on
 *  another thread or calls this from its callback, it stops as interrupted (since 0.8.1;
 *  before, it ran to its end) and the session is freed when it returns. In a child made by
 *  fork(), closing a session of the parent's returns at once (see parley_engine_close()).
 *  Until the close has stored the session, parley_session_open(), parley_session_delete() and
 *  parley_store_get_session_info() of its id on other threads wait for it (since 0.8.5). On
 *  the thread of the call it stops (from its callback), which the close waits for, the
 *  open, the delete and a parley_session_create() of its id with a store return
 *  INVALID_ARGUMENT saying so (since 0.9.5; before, that the session was open or stored).
 *  Thread-safety: any thread. Since: 0.1. */
PARLEY_API void parley_session_close(parley_session *s);

/** Deletes a stored conversation: its transcript and its KV. Another engine on the same store
 *  file that has it open keeps it in memory; its next commit there fails with STORAGE, also
 *  after a conversation is started again under that id.
 *  Errors: INVALID_ARGUMENT (NULL or empty id; the session is open in this engine),
 *  NOT_FOUND (no store, or no such session, including ids no session can have), STORAGE,
 *  MISUSE.
 *  Thread-safety: any thread. While another thread is closing it on the same engine, this
 *  waits until the close has stored it, then deletes it (since 0.8.5). Since: 0.1. */
PARLEY_API parley_status parley_session_delete(parley_engine *e, const char *id);

typedef struct parley_session_info {
  size_t   struct_size;
  char     id[128];          /* NUL-terminated; session ids are at most 127 bytes of UTF-8 */
  uint32_t n_turns;          /* a turn is one message: a user message and its reply are two */
  uint32_t n_tokens;         /* tokens in the conversation */
  int32_t  state;            /* PARLEY_SESSION_ACTIVE, _IDLE, _SPILLED */
  int32_t  overflow;         /* since 0.8: PARLEY_OVERFLOW_*, the session's policy (0 before) */
  uint64_t kv_bytes_resident; /* its blocks in memory; a block sessions share counts in each,
                                 so the sum over sessions may exceed the engine's figure */
  uint64_t kv_bytes_stored;
  char     chat_template[32]; /* since 0.8: the template the session uses, e.g. "chatml" */
} parley_session_info;

/** Facts about a session. A caller built against an older header (a smaller struct_size) gets
 *  the fields it knows.
 *  Errors: INVALID_ARGUMENT, MISUSE, BUSY. Thread-safety: one thread per session. Since: 0.1. */
PARLEY_API parley_status parley_session_get_info(parley_session *s, parley_session_info *out);

typedef struct parley_turn {
  size_t      struct_size;
  const char *text;          /* valid until the next call on this session */
  int32_t     role;          /* PARLEY_ROLE_* */
  uint32_t    n_tokens;      /* tokens this message took in the conversation */
} parley_turn;

/** One message of the conversation; index 0 is the system prompt when there is one.
 *  Errors: INVALID_ARGUMENT, NOT_FOUND (index past the end), MISUSE, BUSY.
 *  Thread-safety: one thread per session. Since: 0.1. */
PARLEY_API parley_status parley_session_get_turn(parley_session *s, uint32_t index,
                                                 parley_turn *out);

/** The token ids of the whole conversation, in order (buffer rule above).
 *  Errors: INVALID_ARGUMENT, MISUSE, BUSY. Thread-safety: one thread per session. Since: 0.1. */
PARLEY_API parley_status parley_session_get_tokens(parley_session *s, int32_t *ids, size_t cap,
                                                   size_t *n_needed);

/** The ids whose sampling ends this session's replies (PARLEY_STOP_END_TOKEN), ascending, each
 *  once (buffer rule above; `*n_ids` is the count): the model's EOS and the other end ids its
 *  files name, the template's end of turn where the vocabulary has it (chatml's <|im_end|>),
 *  and with "raw" BOS. Ban them all with logit_bias -INFINITY (ignore_eos 0) for a reply that
 *  must run to max_tokens. They depend on the model and the session's template only.
 *  Errors: INVALID_ARGUMENT, MISUSE, BUSY. Thread-safety: one thread per session. Since: 0.9. */
PARLEY_API parley_status parley_session_get_end_ids(parley_session *s, int32_t *ids, size_t cap,
                                                    size_t *n_ids);

/** The conversation as portable JSON (buffer rule above), for a game's save file or to carry
 *  it to another store, machine or model: parley_session_import() makes a session of it.
 *  {"format": "parley-conversation", "version": 1, "id", "chat_template", "system_prompt",
 *   "cache_scope", "overflow": "error" | "drop_oldest", "model_fingerprint": 16 hex digits,
 *   "created_unix_ms", "messages": [{"role": "system" | "user" | "assistant", "text",
 *   "tokens": the ids the message added (not on the system message), "closed": whether a
 *   reply ended with its end token (replies only)}]}. The KV is not in it.
 *  Errors: INVALID_ARGUMENT, MISUSE, BUSY. Thread-safety: one thread per session. Since: 0.7. */
PARLEY_API parley_status parley_session_export(parley_session *s, char *buf, size_t cap,
                                               size_t *needed);

/** Makes a session of a conversation parley_session_export() wrote, or JSON of that shape
 *  written elsewhere ("tokens", "closed", "id", "system_prompt", "cache_scope", "overflow",
 *  "model_fingerprint" and "created_unix_ms" may be left out; the system message, if any, is
 *  messages[0] and equals "system_prompt", which left out is taken from it (since 0.9); a
 *  reply without "closed" is open, as with "closed": false, with or without its "tokens"
 *  (since 0.9); unknown keys are ignored). When every message has its tokens and the
 *  fingerprint is this model's, the conversation is taken as it was, ids and all, and its KV
 *  is computed by the next send (kv_source NEW, or REBUILT with a store) or by
 *  parley_session_prepare(); the ids are then what the model reads, and the texts are not
 *  checked against them: to edit a message's text (a save file's editor), leave out its
 *  "tokens", and the conversation is taken from its texts. The system prompt is checked (since
 *  0.9.3): the first user message's tokens must begin with it, as the template renders it,
 *  so one edited needs the messages' "tokens" left out. Otherwise (another model, or texts
 *  only) each user message and the reply after it are added as parley_session_add_exchange()
 *  adds them, KV computed (since 0.8, a last user message without a reply stays one, awaiting
 *  its reply; since 0.8.1, a reply with "closed": true ends with the template's end token, as
 *  the model ends one); so too when the ids do not fit this engine's context and "overflow" is
 *  "drop_oldest" (the oldest exchanges give way, as to a send; since 0.8 one longer than the
 *  context by itself is left out, unless it is the last). A user message right after another
 *  has its missing reply recorded as an empty turn, as a send after a rewind records it (since
 *  0.9.3 with the ids too: the same file gives the same turns). With a store the session is
 *  stored as a new one.
 *  @param[in]  json    the conversation, NUL-terminated
 *  @param[in]  new_id  the session's id, or NULL to keep the conversation's (one is generated
 *                      when it has none)
 *  @param[out] out     the session, or NULL on failure
 *  Ownership: close with parley_session_close().
 *  Errors: INVALID_ARGUMENT (not such JSON: the message names the first wrong field; since
 *  0.9, arrays and objects nested more than 64 deep, a "created_unix_ms" outside int64; since
 *  0.9.3, a key given twice in one object; an unknown template; messages out of order; a
 *  token outside this model's vocabulary; since 0.8.1, a message with text, or the first one,
 *  whose "tokens" are empty; since 0.9.3, a system prompt the tokens do not begin with; a bad
 *  or used id), CONTEXT_FULL (it does not fit the context, "overflow" being "error"; under
 *  "drop_oldest", its last exchange alone does not; since 0.9.3 also when its opening and a
 *  reply's first token do not, as parley_session_create() refuses; the message names the
 *  message that does not fit, when the texts are added),
 *  OUT_OF_MEMORY, STORAGE, MISUSE; nothing is created then.
 *  Thread-safety: any thread. Since: 0.7. */
PARLEY_API parley_status parley_session_import(parley_engine *e, const char *json,
                                               const char *new_id, parley_session **out);

/** Ids of the stored sessions, oldest first, separated by '\n' (buffer rule above); "" without
 *  a store. Errors: INVALID_ARGUMENT, STORAGE, MISUSE. Thread-safety: any thread. Since: 0.1. */
PARLEY_API parley_status parley_store_list_sessions(parley_engine *e, char *buf, size_t cap,
                                                    size_t *needed);

typedef struct parley_stored_session_info {
  size_t   struct_size;
  int64_t  created_unix_ms;  /* when the conversation was started (Unix time, milliseconds) */
  int64_t  updated_unix_ms;  /* when its last change was committed */
  uint32_t n_turns;          /* messages stored, the system prompt included */
  int32_t  is_open;          /* 1: open in this engine (the store may lag a turn that failed
                                to commit; parley_session_get_info has it as it is) */
  uint64_t kv_bytes_stored;  /* its stored KV, shared prefix blocks included; 0 = none */
  int32_t  same_model;       /* 1: its stored KV was computed by this engine's model with
                                this engine's kv_type, so its KV can come back (with no KV
                                stored: it was started with this engine's model); 0: another
                                model's or kv_type's (opening it recomputes the KV, or
                                refuses tokens the model does not have). Since 0.8.2 the
                                stored KV decides; before, the model it was started with */
  int32_t  reserved0;
} parley_stored_session_info;

/** A stored conversation's dates and size, without opening it (a "saved chats" menu).
 *  @param[in]  id   a stored session's id (parley_store_list_sessions)
 *  @param[out] out  caller sets out->struct_size; the library fills that many bytes
 *  Errors: INVALID_ARGUMENT (NULL or empty id, NULL out or a bad struct_size), NOT_FOUND (no
 *  store, or no such session), STORAGE, MISUSE. Thread-safety: any thread; while another
 *  thread is closing the session on the same engine, this waits until the close has stored it
 *  (since 0.8.5). Since: 0.4. */
PARLEY_API parley_status parley_store_get_session_info(parley_engine *e, const char *id,
                                                       parley_stored_session_info *out);

/* ---- Generation -------------------------------------------------------------------------- */

/* A change to one token's logit before sampling (parley_generate_options.logit_bias, since
 * 0.4): a positive bias makes the token likelier, a negative one rarer; -INFINITY bans it (a
 * word the reply must never use, or the end ids for a reply that must not end early:
 * parley_session_get_end_ids() gives them). The ids are the model's: parley_tokenize gives a
 * word's, which may take several. */
typedef struct parley_logit_bias {
  int32_t token;  /* an id of the model's vocabulary */
  float   bias;   /* added to the logit, before the repeat penalty and the temperature;
                     finite, or -INFINITY */
} parley_logit_bias;

/* Start from parley_generate_options_init(). A struct zeroed except for struct_size means
 * greedy decoding with every filter off and no token limit but the context. Each token is
 * chosen by: logit biases, repeat penalty, temperature, top-k, top-p, min-p, then one draw
 * among what is left. Tokens of equal logit rank by id, the lower first (greedy picks it); a
 * logit that a bias or the penalty pushes past the float range stays at its end, so tokens
 * pushed there tie. */
typedef struct parley_generate_options {
  size_t   struct_size;
  uint64_t seed;            /* 0 = a fresh random seed; same seed + same state = same reply */
  uint32_t max_tokens;      /* default 256; 0 = up to the context's end */
  float    temperature;     /* default 0.8; 0 = greedy */
  int32_t  top_k;           /* default 40; 0 = off */
  float    top_p;           /* default 0.95; 1 (or 0) = off */
  float    min_p;           /* default 0.05; 0 = off; drops the tokens less likely than
                               min_p times the likeliest one (after the temperature) */
  float    repeat_penalty;  /* default 1.0 = off (0 also means off); each token in the window
                               (once, however often it occurs) has a positive logit divided by
                               it and a negative one multiplied: > 1 makes repeats rarer, below
                               1 likelier */
  uint32_t repeat_last_n;   /* default 64; the window: the conversation's last n tokens, the
                               system prompt, the template's markers and the reply so far
                               included; 0 = no penalty */
  int32_t  ignore_eos;      /* non-zero: never stop on end tokens (benchmarks, references) */
  /* Since 0.3. The reply ends before the first of these strings it shows: neither the string
   * nor what follows it is streamed or kept, and the tokens that brought only that text are
   * dropped from the conversation; since 0.8.1 a token whose text the string begins inside
   * gives way to the tokens of its part before it, so the conversation's tokens say what the
   * reply says. Text that may be the start of a stop string reaches the callback once the
   * next tokens show it is not. Read during the call only. */
  const char *const *stop;  /* n_stop strings of 1 to PARLEY_MAX_STOP_BYTES bytes of UTF-8 */
  uint32_t n_stop;          /* at most PARLEY_MAX_STOP_STRINGS; default 0 */
  int32_t  reserved0;       /* must be 0 */
  /* Since 0.3. The reply starts with this UTF-8 text, tokenized as plain text (since 0.8.1 the
   * spaces it ends with are kept, also where the tokenizer drops trailing whitespace), and
   * the model goes on from it: a format or a voice to keep ("{", "*nods* "). With the "raw"
   * template it continues the message (" and" starts a word, "," joins the last one; since
   * 0.6, before which a space was put before it); since 0.9.4 it follows "assistant\n" as is
   * with "chatml" and "zephyr" ("{" gets no U+2581), and "llama2" drops the whitespace it
   * starts with, as its template strips a reply. It is streamed first and kept as the
   * reply's start; max_tokens and the stop strings apply to what follows it (a stop string
   * that begins in the prefix and ends after it ends the reply right after it). NULL or ""
   * = none. Read during the call only. */
  const char *reply_prefix;
  /* Since 0.4. Biases of single tokens (see parley_logit_bias), each token listed once; they
   * may not ban every token. Read during the call only. */
  const parley_logit_bias *logit_bias;
  uint32_t n_logit_bias;    /* default 0 */
  /* Since 0.11 (before, a reserved 0). PARLEY_FORMAT_TEXT (the default) or PARLEY_FORMAT_JSON:
   * each token is then drawn only from those that keep the reply's text the start of one JSON
   * object (the sampler's settings choose among them), and the reply ends where the object
   * closes (PARLEY_STOP_FORMAT_END), with nothing after it and never an end token before it.
   * Its strings hold valid UTF-8 and \u escapes of surrogates in pairs; whitespace between
   * tokens is spaces and tabs, at most 32 bytes with at most one line feed (a model cannot
   * loop on blank lines; no carriage return); at most 64 objects and arrays nest; numbers are
   * as JSON writes them, of any size. reply_prefix (for parley_session_continue, the reply so
   * far and the prefix) must be the start of such an object, else INVALID_ARGUMENT.
   * max_tokens, the context's end, a stop string, a stop or the KV budget can still cut the
   * object short (a stop string may cut it where it cannot go on): it is whole when
   * stop_reason says FORMAT_END (and parley_session_continue in the format then generates
   * nothing, FORMAT_END again). The
   * format keeps the model from anything else; tell it, too, what to write (the system prompt,
   * the message), or it may fill the object with little sense. */
  int32_t  format;
  /* Since 0.12. With PARLEY_FORMAT_JSON: a JSON Schema (UTF-8 text) the object must satisfy;
   * NULL or "" = any object. Each token is then drawn only from those that keep the reply the
   * start of an object the schema accepts, and it closes only once it holds what the schema
   * asks. The subset taken: type, enum, const; properties, required, additionalProperties;
   * items, minItems, maxItems (at most 65534); anyOf/oneOf whose branches start differently
   * (an object, a string, a number, null, ...: Optional fields; a oneOf's branches each with
   * a "type"); $ref within the schema ("#/$defs/X"), not recursive; true/false; annotations
   * (title, description, default, format, ...) are read as such, and keywords JSON Schema
   * does not define are ignored. Any other keyword that constrains values (minLength,
   * pattern, minimum, allOf, uniqueItems true, ...), an $id below the root and an enum or
   * const number of 2^63 or more are refused with PARLEY_E_UNSUPPORTED, never ignored; a
   * schema that is not JSON, is malformed, or that no object satisfies is
   * PARLEY_E_INVALID_ARGUMENT; either message names the place (a JSON pointer). An optional
   * property or a branch that no value satisfies is left out. The reply is one of the values the schema accepts, written this way: an
   * object's properties in the schema's order, optional ones maybe left out, and no others
   * (an object schema that lists none takes any keys, and then a key may come twice, as
   * JSON allows and parsers read as the last one); integers without fraction or
   * exponent; enum and const values as compact JSON (in strings, \" \\ \n \t \r \b \f and
   * \u00xx, lowercase, for other control characters; every other character as UTF-8,
   * escaped in the schema or not); a schema without "type" is read from its
   * keywords (properties: an object; items: an array; neither: any value). At most 32
   * objects and arrays nest in what the schema asks, 8192 parts, 1 MiB of text. Set with
   * PARLEY_FORMAT_TEXT it is INVALID_ARGUMENT. Read during the call only. */
  const char *json_schema;
} parley_generate_options;

/** Whether parley_generate_options.json_schema would take `schema`: PARLEY_OK, or the error a
 *  generation with it would return (INVALID_ARGUMENT, UNSUPPORTED; the message names the
 *  place), so that a program can check its schemas when it loads them. NULL or "" is
 *  INVALID_ARGUMENT. Needs no engine. Since: 0.12. */
PARLEY_API parley_status parley_check_json_schema(const char *schema);

/** Fills `o` with defaults; use the macro parley_generate_options_init(o). Since: 0.1. */
PARLEY_API void parley_generate_options_init_sized(parley_generate_options *o, size_t size);
#define parley_generate_options_init(o) parley_generate_options_init_sized((o), sizeof *(o))

/** Receives reply text as it is generated: `len` bytes of whole UTF-8 code points (also
 *  NUL-terminated, and never holding a NUL: bytes that are not valid UTF-8, and a NUL byte a
 *  token stands for, arrive as U+FFFD). Runs on the thread that called
 *  parley_session_send(). Return 0 to go on, non-zero to stop (the send then returns
 *  PARLEY_E_CANCELLED and keeps the partial reply: the text this callback was given, also
 *  when it stops at the reply's last text; since 0.8.2, where before such text was kept and a
 *  stop at the last text ignored).
 *  Calling back into the same session from here returns PARLEY_E_BUSY, except
 *  parley_session_interrupt() (the send then returns CANCELLED) and parley_session_close()
 *  (since 0.8.1 the send then stops as interrupted, returning CANCELLED, and the session is
 *  freed as it returns). The engine and other sessions may be used from here. */
typedef int (*parley_text_fn)(const char *utf8, size_t len, void *user);

typedef struct parley_turn_stats {
  size_t   struct_size;
  uint32_t prompt_tokens;    /* tokens of this turn's input (template + user text) */
  uint32_t reused_tokens;    /* tokens whose KV was already there (history, shared prefix) */
  uint32_t computed_tokens;  /* tokens prefilled in this turn */
  uint32_t generated_tokens;  /* tokens sampled, those a stop string dropped included */
  double   ttft_ms;          /* from the call to the first reply token */
  double   tpot_ms;          /* mean time per reply token after the first */
  double   restore_ms;       /* time spent bringing stored KV back */
  int32_t  kv_source;        /* PARLEY_KV_SOURCE_* */
  int32_t  reserved0;
  int32_t  stop_reason;      /* since 0.3: PARLEY_STOP_*, why the reply ended */
  int32_t  stop_index;       /* since 0.3: which of options->stop the reply ends before; or -1 */
} parley_turn_stats;

/** Adds a user message and generates the reply, streaming it to `on_text`.
 *  Only what is new is computed: the conversation's KV stays in memory between turns, and
 *  leading blocks another session of the same cache_scope computed for the same tokens (a
 *  common system prompt) are shared. A reply stops at its end token, at max_tokens, before a
 *  stop string (options->stop), or at the end of the context; stats->stop_reason says which.
 *  With the "raw" template the user text is the input as is (the first turn starts with BOS;
 *  "" then means BOS alone), as the model's tokenizer encodes it (one that removes extra
 *  whitespace, as sentencepiece models may, drops trailing spaces and collapses runs), and the
 *  reply is its plain continuation.
 *  @param[in]  s          the session
 *  @param[in]  user_text  UTF-8 text
 *  @param[in]  o          options, or NULL for defaults
 *  @param[in]  on_text    callback, or NULL
 *  @param[in]  user       passed to on_text
 *  @param[out] stats      filled when not NULL (caller sets struct_size) and the turn was
 *                         kept: on PARLEY_OK, and on the errors below that keep it
 *  Errors: INVALID_ARGUMENT (invalid UTF-8, bad options), CONTEXT_FULL (the message does not
 *  fit and the overflow policy is ERROR, or it would not fit even alone; the session is left as
 *  before), CANCELLED (interrupted or stopped by the callback; the partial reply is kept as the
 *  turn), OUT_OF_MEMORY (the KV budget is exhausted even after spilling idle sessions, or
 *  spilling them failed: the message then names the session and the store's error, see
 *  kv_budget_bytes; or an allocation failed; the session is left as before, except when
 *  committing the finished turn failed: it is then kept as with STORAGE, and when the budget
 *  ran out during the reply: the reply ends there and is kept as the turn, as with
 *  CANCELLED), STORAGE (the turn could not be
 *  committed to the store: it is kept in memory and committed with the next one; or another engine
 *  on the same store file changed this conversation, also to as many turns as before, or deleted it
 *  and started another under its id: the message says so, and the turns stay in memory; or the
 *  store file was moved, replaced or deleted while open: see parley_engine_open), BAD_MODEL
 *  (since 0.9: the model computed no logit that is not NaN, its weights holding NaN or
 *  infinite values; a token whose logit alone is NaN is never chosen; the session is left as
 *  before), BUSY, MISUSE, BACKEND.
 *  With a store, the turn is committed (synchronous=FULL) before this returns.
 *  Thread-safety: one thread per session. Since: 0.1. */
PARLEY_API parley_status parley_session_send(parley_session *s, const char *user_text,
                                             const parley_generate_options *o,
                                             parley_text_fn on_text, void *user,
                                             parley_turn_stats *stats);

/** Generates without a new user message, streaming to `on_text` as parley_session_send()
 *  does. What it generates depends on how the conversation ends:
 *  - a user message without its reply (after parley_session_rewind(s, 1) dropped the reply):
 *    the reply to it. With the same options and seed this gives the reply the dropped one
 *    was; with another seed, another take on it ("regenerate").
 *  - a reply left open (it stopped at max_tokens, before a stop string, at the end of the
 *    context, when interrupted, or was written with parley_session_add_exchange()): more of
 *    it. The new text is streamed and appended to that reply, which stays one turn; greedy
 *    continuation of a reply cut at max_tokens gives what one longer reply would have. Since
 *    0.8.1, a reply cut inside a character (its text ends with a U+FFFD for the character's
 *    first bytes) has that U+FFFD replaced: the new text starts with the whole character
 *    (or, when the next bytes do not finish one, with the U+FFFD again).
 *  max_tokens and the stop strings apply to the new text (a stop string that begins in the
 *  reply's earlier text and ends in the new text ends the reply where the new text begins:
 *  nothing is added). options->reply_prefix starts a reply that has no text yet, and since
 *  0.6 steers one under way: the reply goes on with it, and the model from there (" and then
 *  the dragon" starts a word, "," joins the last one). stats cover this call (prompt_tokens
 *  0).
 *  Errors: INVALID_ARGUMENT (no user message yet; the model ended the last reply with its end
 *  token: send a message or rewind the reply; bad options), CONTEXT_FULL (no room for one
 *  more token and the overflow policy is ERROR; with DROP_OLDEST the oldest exchanges are
 *  dropped, never the last user message), and the rest as parley_session_send(): CANCELLED
 *  and OUT_OF_MEMORY keep what was generated, STORAGE keeps it in memory; BAD_MODEL, BUSY,
 *  MISUSE, BACKEND.
 *  With a store, the reply is committed (synchronous=FULL) before this returns.
 *  Thread-safety: one thread per session. Since: 0.4. */
PARLEY_API parley_status parley_session_continue(parley_session *s,
                                                 const parley_generate_options *o,
                                                 parley_text_fn on_text, void *user,
                                                 parley_turn_stats *stats);

/** Does now the work the next parley_session_send() or parley_session_continue() would
 *  begin with, so that its first token comes sooner: call it while a game level or a window
 *  loads, or on a thread of your own, then send when the user speaks.
 *  - A session whose KV is in the store (reopened with parley_session_open(), suspended, or
 *    spilled when idle) gets it back now (stats->kv_source RESTORED, or REBUILT when some of
 *    it had to be recomputed; stats->restore_ms).
 *  - Tokens of the conversation without KV (the rest of a prompt or exchange that
 *    parley_session_interrupt() stopped, blocks the store could not give back) are computed,
 *    all but the last one, which the next turn computes with its own message.
 *  - A conversation with no message yet computes the KV of its opening (BOS, the template's
 *    markers and the system prompt), in whole blocks of 16 tokens, and holds it for its first
 *    turn (which reports kv_source RESIDENT since 0.9.3; before, NEW). Sessions of the same
 *    cache_scope that start alike find it too. Suspending the
 *    session lets it go (it stays cached until the KV budget needs the memory).
 *  Calling it again when nothing is left to do costs nothing. Replies are those the session
 *  gives without it (on the CPU backend bit for bit: the work is only done earlier).
 *  @param[out] stats  filled when not NULL (caller sets struct_size): reused_tokens (KV that
 *                     was already there or came from the prefix cache), computed_tokens,
 *                     restore_ms, kv_source; the other fields 0 (stop_index -1)
 *  Errors: CANCELLED (parley_session_interrupt(): what was computed is kept, and stats are
 *  filled), OUT_OF_MEMORY (the KV budget is exhausted even after spilling idle sessions, or
 *  spilling them failed, as with parley_session_send(); the session stays usable),
 *  INVALID_ARGUMENT (bad stats struct_size), BUSY, MISUSE, BACKEND.
 *  Thread-safety: one thread per session. Since: 0.5. */
PARLEY_API parley_status parley_session_prepare(parley_session *s, parley_turn_stats *stats);

/** How likely the model finds each of several replies to a message, without generating and
 *  without changing the conversation: for each reply, the natural log of the probability that
 *  the model, after the conversation so far and `user_text`, replies with exactly that text
 *  (the sum of log p over its tokens, at temperature 1: no sampling options apply). The most
 *  likely reply is the model's choice among a character's possible lines or actions, or the
 *  label it gives a message ("friendly", "hostile"). A longer reply has more tokens to pay
 *  for; logprobs[i] / n_tokens[i] compares replies per token.
 *  With PARLEY_SCORE_WITH_END in `flags` the end of each reply is scored too, so that "Yes" is
 *  not also counted as the start of "Yes, but": the chance that the reply ends there as a
 *  generated one would (PARLEY_STOP_END_TOKEN), at any of the tokens that end it, their
 *  probabilities added: the template's end of reply, EOS, another end id the model's files
 *  name, and with "raw" BOS. (Since 0.8.5; before, a template with an end token of its own
 *  scored that token alone, the first id of an eos_token_id list for llama2, mistral and
 *  zephyr; "raw" scored EOS alone in 0.5-0.7.)
 *  The message is computed once for all replies, over the conversation's KV, which is shared,
 *  not copied (a spilled session's KV comes back from the store first).
 *  With `user_text` NULL (since 0.6) no message is added: each text is scored as what
 *  parley_session_continue() would generate, the missing reply to the last user message, or
 *  more of the open last reply (the texts then continue it: " and" starts a word, "," joins
 *  the last one); which ending the model finds likeliest for a line it began.
 *  @param[in]  user_text  UTF-8 text ("" allowed), or NULL to score continuations
 *  @param[in]  replies    n_replies UTF-8 texts, written as parley_session_add_exchange() takes
 *                         them ("" allowed: 0 tokens, logprob 0 unless the end is scored)
 *  @param[in]  flags      0 or PARLEY_SCORE_WITH_END
 *  @param[out] logprobs   n_replies values, each <= 0
 *  @param[out] n_tokens   n_replies token counts (the end's included), or NULL
 *  Errors: INVALID_ARGUMENT (NULL replies or logprobs, invalid UTF-8, n_replies 0 or above
 *  PARLEY_MAX_SCORED_REPLIES, unknown flags; with user_text NULL: nothing to go on from, as
 *  for parley_session_continue()), CONTEXT_FULL (the message and one of the replies
 *  do not fit in what is left of the context; the message says which), CANCELLED
 *  (parley_session_interrupt()), OUT_OF_MEMORY, BAD_MODEL (since 0.9: NaN logits, as for
 *  parley_session_send()), BUSY, MISUSE, BACKEND. The outputs are written only on PARLEY_OK.
 *  Thread-safety: one thread per session. Since: 0.5. */
PARLEY_API parley_status parley_session_score_replies(parley_session *s, const char *user_text,
                                                      const char *const *replies,
                                                      size_t n_replies, uint32_t flags,
                                                      double *logprobs, uint32_t *n_tokens);

/** Measures a message before it is sent: how many tokens parley_session_send(s, user_text)
 *  would add before its reply (the message with the template's markers and what closes the
 *  previous reply, as stats->prompt_tokens would say), and how many of the context's tokens
 *  would then be left for the reply; 0 left means it does not fit (send then refuses it, or
 *  with PARLEY_OVERFLOW_DROP_OLDEST drops the oldest exchanges; when that drops every one, the
 *  message opens the conversation again, with BOS and the system prompt, and the send's
 *  prompt_tokens counts those too). Since 0.9.3 a message whose
 *  first bytes alone take more tokens than the context holds is not measured to its end (it
 *  cannot fit, and send refuses it as quickly): *prompt_tokens is then a lower bound, larger
 *  than the context, and *context_left 0. Nothing is computed or changed.
 *  @param[out] prompt_tokens  may be NULL
 *  @param[out] context_left   may be NULL
 *  Errors: INVALID_ARGUMENT (NULL or invalid UTF-8 text), BUSY, MISUSE.
 *  Thread-safety: one thread per session. Since: 0.4. */
PARLEY_API parley_status parley_session_count_tokens(parley_session *s, const char *user_text,
                                                     uint32_t *prompt_tokens,
                                                     uint32_t *context_left);

/** Adds a user message and a reply to it that the caller wrote, without generating, as if the
 *  model had replied so: a character's scripted lines, or a conversation carried over from
 *  elsewhere. The reply is tokenized as plain text, as user text is, except that the spaces it
 *  ends with are kept, as a reply_prefix's are (where the tokenizer drops trailing whitespace,
 *  user text loses them; "llama2" strips them, see below), and it is left open, as one cut at
 *  max_tokens: the next turn closes it the way the template closes a reply. With the "raw"
 *  template the reply continues the message as the model's own reply would, and as a
 *  streamed raw reply reads: " there was" starts a word, ", and" joins the last one (since
 *  0.6; before, a space was put before every reply). With "llama2" and "mistral" a leading
 *  space is taken as the one the reply's first word has (streaming drops it); since 0.9.4
 *  "llama2" strips the reply, its end too, as its published template does (a reply of
 *  whitespace alone then has no ids, and parley_session_continue() starts it anew), and
 *  "chatml" and "zephyr" put the reply after "assistant\n" as is, as their published
 *  templates render it (before, their replies were tokenized as a text of their own, so a
 *  first word got a U+2581 the model never wrote). The KV of
 *  both is computed before this returns (parley_session_interrupt() stops that part, and the
 *  call still returns PARLEY_OK: the next turn computes the rest), so the next send()
 *  computes little more than its own message.
 *  Both are turns (parley_session_get_turn; rewinding 2 removes them).
 *  @param[in] s           the session
 *  @param[in] user_text   UTF-8 text ("" allowed)
 *  @param[in] reply_text  UTF-8 text ("" allowed)
 *  Errors: INVALID_ARGUMENT (NULL or invalid UTF-8), CONTEXT_FULL (the two do not fit, as in
 *  parley_session_send(); since 0.9.3 a reply whose first bytes alone take more tokens than
 *  the context holds is refused from them, as a message is; the session is left as before),
 *  OUT_OF_MEMORY (the session is left as before), STORAGE (kept in memory and committed with
 *  the next turn, as in parley_session_send()), BUSY, MISUSE, BACKEND.
 *  With a store, the exchange is committed (synchronous=FULL) before this returns.
 *  Thread-safety: one thread per session. Since: 0.3. */
PARLEY_API parley_status parley_session_add_exchange(parley_session *s, const char *user_text,
                                                     const char *reply_text);

/* ---- Tokens ------------------------------------------------------------------------------ */

/** Text to token ids with the model's tokenizer (buffer rule above); control tokens are never
 *  produced from text. Pieces a vocabulary types user-defined but writes as chat markers
 *  ("<|" ... "|>" such as "<|im_start|>", and "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>") count
 *  as control tokens (a warning is logged at load).
 *  @param[in] add_bos  non-zero: start with BOS
 *  Errors: INVALID_ARGUMENT (NULL, invalid UTF-8), MISUSE. Thread-safety: any thread.
 *  Since: 0.1. */
PARLEY_API parley_status parley_tokenize(parley_engine *e, const char *text, int32_t add_bos,
                                         int32_t *ids, size_t cap, size_t *n_needed);

/** Token ids to text (buffer rule above; `*needed` includes the NUL; a NUL byte a token
 *  stands for comes out as U+FFFD). `ids` may be NULL
 *  when n is 0 (the text is then "").
 *  Errors: INVALID_ARGUMENT (NULL, an id outside the vocabulary), MISUSE.
 *  Thread-safety: any thread. Since: 0.1. */
PARLEY_API parley_status parley_detokenize(parley_engine *e, const int32_t *ids, size_t n,
                                           char *buf, size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* PARLEY_H */
