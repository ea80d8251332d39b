"""ParleyError and one subclass per parley_status code."""

import ctypes

from . import _library


class ParleyError(Exception):
    """A Parley call failed. `status` is the parley_status code, `message` the library's
    parley_last_error() text for that failure, `reply` the reply a send, stream or
    continue_reply kept as the turn although it failed (CancelledError, OutOfMemoryError,
    StorageError), else None. A ParleyError made with a message alone (a program's own, for
    a failure of its own around Parley) has no status: its text is the message."""

    status = None  # set on each subclass
    reply = None

    def __init__(self, message, status=None):
        if status is not None:
            self.status = status
        self.message = message
        if self.status is None:
            super().__init__(message)
        else:
            super().__init__("%s: %s" % (_status_name(self.status), message))

    def __reduce__(self):
        # Made again from the message, not from args (the message with the status in front,
        # which __init__ would prefix again); __dict__ brings back .reply and the like.
        return type(self), (self.message, self.__dict__.get("status")), self.__dict__


class InvalidArgumentError(ParleyError, ValueError):
    status = 1


class NotFoundError(ParleyError):
    status = 2


class IoError(ParleyError):
    status = 3


class BadModelError(ParleyError):
    status = 4


class UnsupportedError(ParleyError):
    status = 5


class OutOfMemoryError(ParleyError):
    """An allocation failed, or the KV budget was exhausted. When the budget ran out during a
    reply of Session.send(), continue_reply() or a stream (or storing the finished turn
    failed), the reply ends there and is kept as the turn: `reply` holds it, and last_stats
    describes it. Otherwise `reply` is None and the session is as before."""
    status = 6


class ContextFullError(ParleyError):
    status = 7


class BusyError(ParleyError):
    status = 8


class CancelledError(ParleyError):
    """The reply was stopped by Session.interrupt() (or by closing the session while it ran),
    or a load by Engine's on_load_progress (since 0.10). `reply` holds the partial reply,
    which the session keeps as the turn ("" when it was stopped before its first text); None
    from calls that make no reply (prepare, score_replies, Engine)."""
    status = 9


class CorruptError(ParleyError):
    status = 10


class ModelMismatchError(ParleyError):
    status = 11


class StorageError(ParleyError):
    """The session store failed (disk full, locked, I/O), or another engine on the same store
    file changed the conversation. From Session.send(), continue_reply() or a stream, the
    turn is kept in memory (stored with the next one, or, when another engine changed the
    conversation, in memory only): `reply` holds its reply, and last_stats describes it.
    From other calls `reply` is None."""
    status = 12


class BackendError(ParleyError):
    status = 13


class InternalError(ParleyError):
    status = 14


class MisuseError(ParleyError):
    status = 15


_BY_STATUS = {cls.status: cls for cls in ParleyError.__subclasses__()}


def _status_name(status):
    try:
        return _library.lib().parley_status_name(status).decode()
    except (OSError, ctypes.ArgumentError):
        # The library is missing, or the status is not a C int: still say something.
        return "PARLEY_STATUS_%s" % status


def error_for(status, message):
    """The exception for a status code; codes newer than this package become ParleyError."""
    cls = _BY_STATUS.get(status)
    return cls(message) if cls else ParleyError(message, status)


def last_error():
    """parley_last_error(): read it right after the failing call, on the same thread (it is
    thread-local)."""
    return _library.lib().parley_last_error().decode(errors="replace")


def check(status):
    """Raises the matching ParleyError unless `status` is PARLEY_OK. Call it right after the
    failing call, on the same thread: parley_last_error() is thread-local."""
    if status != 0:
        raise error_for(status, last_error())
