"""Parley: on-device chat with lasting conversations, through libparley's C ABI (ctypes).

    import parley
    with parley.Engine("model.gguf") as engine, engine.session() as chat:
        for piece in chat.stream("Hello!"):
            print(piece, end="", flush=True)

libparley.so.0 is found through PARLEY_LIBRARY (a path), else beside this package, else in
the build trees of the repository this package sits in, else by the system loader.
"""

from . import _interrupts, _library, _native, _options, errors
from ._library import LibraryError
from .engine import Engine
from .errors import (BackendError, BadModelError, BusyError, CancelledError,
                     ContextFullError, CorruptError, InternalError, InvalidArgumentError,
                     IoError, MisuseError, ModelMismatchError, NotFoundError,
                     OutOfMemoryError, ParleyError, StorageError, UnsupportedError)
from .info import (EngineStats, ModelInfo, ReplyScore, SessionInfo, StoredSessionInfo,
                   TokenCount, TurnStats)
from .session import Session

__version__ = "0.12.0"

__all__ = [
    "Engine", "Session", "EngineStats", "ModelInfo", "ReplyScore", "SessionInfo",
    "StoredSessionInfo", "TokenCount", "TurnStats",
    "version", "version_number", "library_path", "set_log_callback", "check_json_schema",
    "LibraryError",
    "ParleyError", "InvalidArgumentError", "NotFoundError", "IoError", "BadModelError",
    "UnsupportedError", "OutOfMemoryError", "ContextFullError", "BusyError", "CancelledError",
    "CorruptError", "ModelMismatchError", "StorageError", "BackendError", "InternalError",
    "MisuseError",
]


def version():
    """The loaded library's version, "MAJOR.MINOR.PATCH"."""
    return _library.lib().parley_version().decode()


def version_number():
    """The loaded library's version as MAJOR*10000 + MINOR*100 + PATCH."""
    return _library.lib().parley_version_number()


def check_json_schema(json_schema):
    """Raises what a reply's json_schema would raise (UnsupportedError for a keyword outside
    the subset taken, InvalidArgumentError for a schema that is not one), naming the place;
    returns None when a generation would take it. For checking schemas when a program loads
    them: no engine needed. json_schema: JSON text, or a value json.dumps takes (a dict).
    Since 0.12."""
    schema = _options.json_schema_arg(json_schema)
    if schema is None:
        raise InvalidArgumentError("json_schema is None")
    errors.check(_library.lib().parley_check_json_schema(schema))


def library_path():
    """The file the library was loaded from."""
    return _library.lib()._name


_log_callback = None  # the C function object must outlive every call the library makes


def set_log_callback(fn):
    """Sends the library's log lines to fn(level, message) (level: 0 error, 1 warn, 2 info,
    3 debug); None restores the default (warnings and errors to stderr). Call it before the
    first Engine opens. fn runs on whichever thread logs (for the calls a Ctrl-C stops, made
    on the main thread, a worker of the binding's) and must not call into Parley, nor wait
    for a thread that may be in a Parley call (an open waits for a close that logs); what it
    raises is dropped, but for a KeyboardInterrupt (Ctrl-C) on the main thread, which the
    Parley call that logged raises as it returns. Raises InvalidArgumentError when fn is
    neither callable nor None (the callback in force is then kept)."""
    global _log_callback
    _options.callable_arg("fn", fn)
    if fn is None:
        _library.lib().parley_set_log_callback(_native.parley_log_fn(), None)
        _log_callback = None
        return

    def on_log(level, message, _user):
        try:
            fn(level, message.decode("utf-8", errors="replace"))
        except KeyboardInterrupt:
            _interrupts.note()  # main thread: raised by the call that logged; else dropped
        except BaseException:  # noqa: B902 - must not propagate into C
            pass

    callback = _native.parley_log_fn(on_log)
    _library.lib().parley_set_log_callback(callback, None)
    _log_callback = callback
