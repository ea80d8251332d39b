"""ctypes mirror of include/parley.h: the structs with their exact layouts and the signature
of every parley_* function. Nothing here decides policy; engine.py and session.py do."""

import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int,
                    c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

# The version this binding was written against (PARLEY_VERSION_NUMBER of parley.h).
VERSION_NUMBER = 0 * 10000 + 12 * 100 + 0
SCORE_WITH_END = 1  # PARLEY_SCORE_WITH_END: parley_session_score_replies scores each end

parley_status = c_int32
engine_p = c_void_p  # parley_engine *
session_p = c_void_p  # parley_session *

# The utf8 argument is a raw pointer so the exact `len` bytes can be read with string_at.
parley_text_fn = CFUNCTYPE(c_int, c_void_p, c_size_t, c_void_p)
parley_log_fn = CFUNCTYPE(None, c_int, c_char_p, c_void_p)
parley_progress_fn = CFUNCTYPE(c_int, c_float, c_void_p)  # since 0.10


class EngineOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("model_path", c_char_p),
        ("store_path", c_char_p),
        ("device", c_char_p),
        ("n_threads", c_int32),
        ("kv_type", c_int32),
        ("kv_budget_bytes", c_uint64),
        ("idle_spill_ms", c_uint32),
        ("context_length", c_uint32),
        ("on_load_progress", parley_progress_fn),  # since 0.10
        ("load_progress_user", c_void_p),
    ]


class EngineStats(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("sessions_active", c_uint32),
        ("sessions_idle", c_uint32),
        ("sessions_spilled", c_uint32),
        ("reserved0", c_uint32),
        ("kv_blocks_total", c_uint64),
        ("kv_blocks_used", c_uint64),
        ("kv_blocks_shared", c_uint64),
        ("kv_blocks_cached", c_uint64),
        ("kv_bytes_per_token", c_uint64),
        ("kv_bytes_resident", c_uint64),
        ("kv_budget_bytes", c_uint64),
        ("prefix_hits", c_uint64),
        ("prefix_misses", c_uint64),
        ("store_bytes", c_uint64),
        ("decode_steps", c_uint64),
        ("decode_tokens", c_uint64),
    ]


class ModelInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("name", c_char * 128),
        ("architecture", c_char * 32),
        ("chat_template", c_char * 32),
        ("n_vocab", c_uint32),
        ("n_layers", c_uint32),
        ("n_heads", c_uint32),
        ("n_kv_heads", c_uint32),
        ("head_dim", c_uint32),
        ("embedding_length", c_uint32),
        ("context_length", c_uint32),
        ("reserved0", c_uint32),
        ("n_params", c_uint64),
        ("backend", c_char * 32),
    ]


class SessionOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("id", c_char_p),
        ("system_prompt", c_char_p),
        ("chat_template", c_char_p),
        ("cache_scope", c_char_p),
        ("overflow", c_int32),
        ("reserved0", c_int32),
    ]


class SessionInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("id", c_char * 128),
        ("n_turns", c_uint32),
        ("n_tokens", c_uint32),
        ("state", c_int32),
        ("overflow", c_int32),  # since 0.8 (was reserved0)
        ("kv_bytes_resident", c_uint64),
        ("kv_bytes_stored", c_uint64),
        ("chat_template", c_char * 32),  # since 0.8
    ]


class StoredSessionInfo(Structure):  # since 0.4
    _fields_ = [
        ("struct_size", c_size_t),
        ("created_unix_ms", c_int64),
        ("updated_unix_ms", c_int64),
        ("n_turns", c_uint32),
        ("is_open", c_int32),
        ("kv_bytes_stored", c_uint64),
        ("same_model", c_int32),
        ("reserved0", c_int32),
    ]


class Turn(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("text", c_char_p),
        ("role", c_int32),
        ("n_tokens", c_uint32),
    ]


class LogitBias(Structure):  # since 0.4
    _fields_ = [
        ("token", c_int32),
        ("bias", c_float),
    ]


class GenerateOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("seed", c_uint64),
        ("max_tokens", c_uint32),
        ("temperature", c_float),
        ("top_k", c_int32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repeat_penalty", c_float),
        ("repeat_last_n", c_uint32),
        ("ignore_eos", c_int32),
        ("stop", POINTER(c_char_p)),  # since 0.3
        ("n_stop", c_uint32),
        ("reserved0", c_int32),
        ("reply_prefix", c_char_p),  # since 0.3
        ("logit_bias", POINTER(LogitBias)),  # since 0.4
        ("n_logit_bias", c_uint32),
        ("format", c_int32),  # since 0.11
        ("json_schema", c_char_p),  # since 0.12
    ]


class TurnStats(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("prompt_tokens", c_uint32),
        ("reused_tokens", c_uint32),
        ("computed_tokens", c_uint32),
        ("generated_tokens", c_uint32),
        ("ttft_ms", c_double),
        ("tpot_ms", c_double),
        ("restore_ms", c_double),
        ("kv_source", c_int32),
        ("reserved0", c_int32),
        ("stop_reason", c_int32),  # since 0.3
        ("stop_index", c_int32),
    ]


def sized(struct_type):
    """A zeroed struct whose struct_size is this binding's own size of it (the caller's size,
    as the header's *_init macros pass it)."""
    s = struct_type()
    s.struct_size = ctypes.sizeof(struct_type)
    return s


# name: (restype, argtypes) for every function parley.h declares.
SIGNATURES = {
    "parley_version": (c_char_p, []),
    "parley_version_number": (c_uint32, []),
    "parley_status_name": (c_char_p, [parley_status]),
    "parley_last_error": (c_char_p, []),
    "parley_set_log_callback": (None, [parley_log_fn, c_void_p]),
    "parley_engine_options_init_sized": (None, [POINTER(EngineOptions), c_size_t]),
    "parley_engine_open": (parley_status, [POINTER(EngineOptions), POINTER(engine_p)]),
    "parley_engine_close": (None, [engine_p]),
    "parley_engine_get_stats": (parley_status, [engine_p, POINTER(EngineStats)]),
    "parley_engine_get_model_info": (parley_status, [engine_p, POINTER(ModelInfo)]),
    "parley_session_options_init_sized": (None, [POINTER(SessionOptions), c_size_t]),
    "parley_session_create": (parley_status,
                              [engine_p, POINTER(SessionOptions), POINTER(session_p)]),
    "parley_session_open": (parley_status, [engine_p, c_char_p, POINTER(session_p)]),
    "parley_session_fork": (parley_status, [session_p, c_char_p, POINTER(session_p)]),
    "parley_session_suspend": (parley_status, [session_p]),
    "parley_session_interrupt": (parley_status, [session_p]),
    "parley_session_rewind": (parley_status, [session_p, c_uint32]),
    "parley_session_set_overflow": (parley_status, [session_p, c_int32]),  # since 0.8
    "parley_session_set_system_prompt": (parley_status, [session_p, c_char_p]),
    "parley_session_close": (None, [session_p]),
    "parley_session_delete": (parley_status, [engine_p, c_char_p]),
    "parley_session_get_info": (parley_status, [session_p, POINTER(SessionInfo)]),
    "parley_session_get_turn": (parley_status, [session_p, c_uint32, POINTER(Turn)]),
    "parley_session_get_tokens": (parley_status,
                                  [session_p, POINTER(c_int32), c_size_t, POINTER(c_size_t)]),
    "parley_session_get_end_ids": (parley_status,  # since 0.9
                                   [session_p, POINTER(c_int32), c_size_t, POINTER(c_size_t)]),
    "parley_session_export": (parley_status,  # since 0.7
                              [session_p, POINTER(c_char), c_size_t, POINTER(c_size_t)]),
    "parley_session_import": (parley_status,  # since 0.7
                              [engine_p, c_char_p, c_char_p, POINTER(session_p)]),
    "parley_store_list_sessions": (parley_status,
                                   [engine_p, POINTER(c_char), c_size_t, POINTER(c_size_t)]),
    "parley_store_get_session_info": (parley_status,
                                      [engine_p, c_char_p, POINTER(StoredSessionInfo)]),
    "parley_generate_options_init_sized": (None, [POINTER(GenerateOptions), c_size_t]),
    "parley_check_json_schema": (parley_status, [c_char_p]),  # since 0.12
    "parley_session_send": (parley_status,
                            [session_p, c_char_p, POINTER(GenerateOptions), parley_text_fn,
                             c_void_p, POINTER(TurnStats)]),
    "parley_session_continue": (parley_status,
                                [session_p, POINTER(GenerateOptions), parley_text_fn, c_void_p,
                                 POINTER(TurnStats)]),
    "parley_session_prepare": (parley_status, [session_p, POINTER(TurnStats)]),
    "parley_session_score_replies": (parley_status,
                                     [session_p, c_char_p, POINTER(c_char_p), c_size_t, c_uint32,
                                      POINTER(c_double), POINTER(c_uint32)]),
    "parley_session_count_tokens": (parley_status,
                                    [session_p, c_char_p, POINTER(c_uint32), POINTER(c_uint32)]),
    "parley_session_add_exchange": (parley_status, [session_p, c_char_p, c_char_p]),
    "parley_tokenize": (parley_status,
                        [engine_p, c_char_p, c_int32, POINTER(c_int32), c_size_t,
                         POINTER(c_size_t)]),
    "parley_detokenize": (parley_status,
                          [engine_p, POINTER(c_int32), c_size_t, POINTER(c_char), c_size_t,
                           POINTER(c_size_t)]),
}


def declare(lib):
    """Sets restype/argtypes on every parley_* function of `lib`; a missing one raises
    AttributeError naming it."""
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
