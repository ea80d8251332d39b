"""Python arguments -> the option structs of parley.h, initialised by the library's
*_init_sized functions with this binding's struct sizes."""

import collections.abc
import ctypes
import json
import math
import numbers
import os

from . import _native
from .errors import InvalidArgumentError

KV_TYPES = {"default": 0, "int8": 1, "f16": 2, "f32": 3}
OVERFLOW_POLICIES = {"error": 0, "drop_oldest": 1}
FORMATS = {"text": 0, "json": 1}  # parley_generate_options.format, since 0.11


def text_arg(name, value, path=False, optional=True):
    """str -> NUL-terminated UTF-8 bytes (a path: the file system's encoding, also from
    os.PathLike); None stays None (NULL) where optional, else is refused here, under the
    Python name, not later by the library under its C one."""
    if value is None and optional:
        return None
    if path and isinstance(value, os.PathLike):
        try:
            value = os.fspath(value)
        except TypeError as e:  # its __fspath__() gave neither str nor bytes
            raise InvalidArgumentError("%s is not a usable path: %s" % (name, e)) from None
    if isinstance(value, str):
        try:
            # A path as open() takes it: undecodable bytes it was read with round-trip.
            data = os.fsencode(value) if path else value.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: not text C can be given
            raise InvalidArgumentError("%s is not valid Unicode text: %s" % (name, e)) from None
    elif isinstance(value, bytes):
        data = value
    else:
        raise InvalidArgumentError("%s must be a %s, not %s"
                                   % (name, "str, bytes or os.PathLike" if path else "str",
                                      type(value).__name__))
    if b"\0" in data:
        # C would silently stop reading at the NUL.
        raise InvalidArgumentError("%s contains a NUL character" % name)
    return data


def int_arg(name, value, ctype):
    """Refuses what the C field cannot hold, rather than letting ctypes wrap it around."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError("%s must be an int, not %s" % (name, type(value).__name__))
    bits = ctypes.sizeof(ctype) * 8
    signed = ctype(-1).value == -1
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not low <= value <= high:
        raise InvalidArgumentError("%s = %d is outside [%d, %d]" % (name, value, low, high))
    return value


def float_arg(name, value):
    """A real number -> float; a str (even "0.5") or a bool is refused, not converted. A
    number too large for the C float is for the library to judge (it reads inf); one too
    small to be told from 0 is refused here, as the library would only see 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError("%s must be a float, not %s" % (name, type(value).__name__))
    number = _float(value)
    if number != 0 and ctypes.c_float(number).value == 0:
        # The C float would read 0, which means "off" for some options: the opposite of a
        # tiny value's meaning.
        raise InvalidArgumentError("%s = %r is too small for a C float: it would be 0"
                                   % (name, value))
    return number


def _float(value):
    """float(value), infinite past the range of a double (an int such as 10**400), as a C
    float is past its own: the library then judges it as it judges 1e300."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def callable_arg(name, value):
    """A callable or None, checked before the call rather than when it is first called."""
    if value is not None and not callable(value):
        raise InvalidArgumentError("%s must be callable or None, not %s"
                                   % (name, type(value).__name__))
    return value


def choice_arg(name, value, choices):
    try:
        return choices[value]
    except (KeyError, TypeError):
        raise InvalidArgumentError("%s must be one of %s, not %r"
                                   % (name, ", ".join(sorted(choices)), value)) from None


def _items(name, value, item="str"):
    """The items of a sequence argument as a list; a lone str or bytes (a sequence of
    characters, surely not what was meant) or a non-sequence is refused, naming `name`."""
    if isinstance(value, (str, bytes)):
        raise InvalidArgumentError("%s must be a sequence of %s, not a single %s; "
                                   "wrap it in a list" % (name, item, type(value).__name__))
    try:
        return list(value)
    except TypeError:
        raise InvalidArgumentError("%s must be a sequence of %s, not %s"
                                   % (name, item, type(value).__name__)) from None


def stop_arg(stop):
    """A sequence of str -> (char *[] of UTF-8, count); None or empty -> (None, 0). How many
    and how long is for the library to judge, so its limits live in one place."""
    if stop is None:
        return None, 0
    if isinstance(stop, (collections.abc.Set, collections.abc.Mapping)):
        # Their order is not the caller's, and stop_index tells a place in that order.
        raise InvalidArgumentError("stop must be a list or tuple of str (its order gives "
                                   "stop_index), not %s" % type(stop).__name__)
    items = _items("stop", stop)
    if not items:
        return None, 0
    encoded = []
    for i, s in enumerate(items):
        name = "stop[%d]" % i
        if not isinstance(s, str):
            raise InvalidArgumentError("%s must be a str, not %s" % (name, type(s).__name__))
        encoded.append(text_arg(name, s))
    # The options struct that is given this array keeps it, and the array its bytes, alive
    # (ctypes' _objects): a stream() may send long after this returns.
    return (ctypes.c_char_p * len(encoded))(*encoded), len(encoded)


def ids_arg(ids):
    """A sequence of token ids -> int32[] (at least one element, so that the pointer is
    valid), count."""
    items = _items("ids", ids, "int")
    array = (ctypes.c_int32 * max(len(items), 1))(
        *(int_arg("ids[%d]" % i, v, ctypes.c_int32) for i, v in enumerate(items)))
    return array, len(items)


def replies_arg(replies):
    """A sequence of str -> (the items as given, their UTF-8 bytes). How many is for the
    library to judge, 0 included."""
    items = _items("replies", replies)
    return items, [text_arg("replies[%d]" % i, r, optional=False) for i, r in enumerate(items)]


def logit_bias_arg(logit_bias):
    """{token id: bias}, or an iterable of (token id, bias) pairs -> (parley_logit_bias[],
    count); None or empty -> (None, 0). Whether the ids are in the vocabulary, each listed once,
    and the biases finite or -inf is for the library to judge: it knows the vocabulary."""
    if logit_bias is None:
        return None, 0
    what = "logit_bias must be a mapping {token id: bias} or (token id, bias) pairs"
    if isinstance(logit_bias, collections.abc.Mapping):
        items = list(logit_bias.items())
    elif isinstance(logit_bias, (str, bytes)):
        raise InvalidArgumentError("%s, not %s" % (what, type(logit_bias).__name__))
    else:
        try:
            items = list(logit_bias)
        except TypeError:
            raise InvalidArgumentError("%s, not %s"
                                       % (what, type(logit_bias).__name__)) from None
    if not items:
        return None, 0
    entries = []
    for i, item in enumerate(items):
        try:
            token, bias = item
        except (TypeError, ValueError):
            raise InvalidArgumentError("logit_bias[%d] must be a (token id, bias) pair, not %r"
                                       % (i, item)) from None
        if isinstance(token, bool) or not isinstance(token, int):
            raise InvalidArgumentError("logit_bias token %r must be an int, not %s"
                                       % (token, type(token).__name__))
        int_arg("logit_bias token", token, ctypes.c_int32)  # ctypes would wrap it around
        if isinstance(bias, bool) or not isinstance(bias, numbers.Real):
            raise InvalidArgumentError("the logit_bias of token %d must be a float, not %s"
                                       % (token, type(bias).__name__))
        entries.append(_native.LogitBias(token, _float(bias)))
    # As with stop: the options struct keeps the array alive (ctypes' _objects).
    return (_native.LogitBias * len(entries))(*entries), len(entries)


def engine_options(lib, model, store, device, kv, threads, kv_budget, idle_spill_ms, context):
    o = _native.EngineOptions()
    lib.parley_engine_options_init_sized(ctypes.byref(o), ctypes.sizeof(o))
    o.model_path = text_arg("model", model, path=True, optional=False)
    o.store_path = text_arg("store", store, path=True)
    o.device = text_arg("device", device)
    o.n_threads = int_arg("threads", threads, ctypes.c_int32)
    o.kv_type = choice_arg("kv", kv, KV_TYPES)
    o.kv_budget_bytes = int_arg("kv_budget", kv_budget, ctypes.c_uint64)
    o.idle_spill_ms = int_arg("idle_spill_ms", idle_spill_ms, ctypes.c_uint32)
    o.context_length = int_arg("context", context, ctypes.c_uint32)
    return o


def session_options(lib, id, system, template, scope, overflow):
    o = _native.SessionOptions()
    lib.parley_session_options_init_sized(ctypes.byref(o), ctypes.sizeof(o))
    o.id = text_arg("id", id)
    o.system_prompt = text_arg("system", system)
    o.chat_template = text_arg("template", template)
    o.cache_scope = text_arg("scope", scope)
    o.overflow = choice_arg("overflow", overflow, OVERFLOW_POLICIES)
    return o


def format_arg(format, json_schema=None):
    """The reply's format: "text" (or None, the default) or "json"; None is "json" when a
    json_schema is given, which "text" cannot take."""
    if format is None:
        return FORMATS["text" if json_schema is None else "json"]
    if not isinstance(format, str) or format not in FORMATS:
        raise InvalidArgumentError('format must be "text", "json" or None, not %r'
                                   % (format,))
    if format == "text" and json_schema is not None:
        raise InvalidArgumentError('json_schema is given with format="text": a schema needs '
                                   'format="json" (or format left out)')
    return FORMATS[format]


def json_schema_arg(json_schema):
    """A JSON Schema -> UTF-8 JSON text: a str as it is, any other value as json.dumps writes
    it (in its own key order: the schema's order is the reply's); None stays None (NULL).
    Whether it is a schema, and one of the subset taken, is for the library to judge."""
    if json_schema is None or isinstance(json_schema, (str, bytes)):
        return text_arg("json_schema", json_schema)
    try:
        text = json.dumps(json_schema, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidArgumentError("json_schema must be JSON text (a str) or a value json.dumps "
                                   "takes (a dict): %s" % e) from None
    return text_arg("json_schema", text)


def generate_options(lib, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty,
                     repeat_last_n, seed, ignore_eos, stop, reply_prefix, logit_bias, format,
                     json_schema):
    reply_format = format_arg(format, json_schema)
    schema = json_schema_arg(json_schema)
    o = _native.GenerateOptions()
    lib.parley_generate_options_init_sized(ctypes.byref(o), ctypes.sizeof(o))
    o.seed = int_arg("seed", seed, ctypes.c_uint64)
    o.max_tokens = int_arg("max_tokens", max_tokens, ctypes.c_uint32)
    o.temperature = float_arg("temperature", temperature)
    o.top_k = int_arg("top_k", top_k, ctypes.c_int32)
    o.top_p = float_arg("top_p", top_p)
    o.min_p = float_arg("min_p", min_p)
    o.repeat_penalty = float_arg("repeat_penalty", repeat_penalty)
    o.repeat_last_n = int_arg("repeat_last_n", repeat_last_n, ctypes.c_uint32)
    o.ignore_eos = 1 if ignore_eos else 0
    o.stop, o.n_stop = stop_arg(stop)
    # Like stop, the struct keeps the bytes alive (ctypes' _objects) until a stream() sends.
    o.reply_prefix = text_arg("reply_prefix", reply_prefix)
    o.logit_bias, o.n_logit_bias = logit_bias_arg(logit_bias)
    o.format = reply_format
    o.json_schema = schema  # kept alive so too
    return o
