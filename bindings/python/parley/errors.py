"""ParleyError and one subclass per parley_status code."""

from . import _library


class ParleyError(Exception):
    """A Parley call failed. `status` is the parley_status code, `message` the library's
    parley_last_error() text for that failure."""

    status = None  # set on each subclass

    def __init__(self, message, status=None):
        if status is not None:
            self.status = status
        self.message = message
        super().__init__("%s: %s" % (_status_name(self.status), message))


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
    status = 6


class ContextFullError(ParleyError):
    status = 7


class BusyError(ParleyError):
    status = 8


class CancelledError(ParleyError):
    """The reply was stopped by Session.interrupt(). `reply` holds the partial reply, which the
    session keeps as the turn."""
    status = 9
    reply = ""


class CorruptError(ParleyError):
    status = 10


class ModelMismatchError(ParleyError):
    status = 11


class StorageError(ParleyError):
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
    except OSError:
        return "PARLEY_STATUS_%s" % status  # the library is missing: still say something


def error_for(status, message):
    """The exception for a status code; codes newer than this package become ParleyError."""
    cls = _BY_STATUS.get(status)
    return cls(message) if cls else ParleyError(message, status)


def check(status):
    """Raises the matching ParleyError unless `status` is PARLEY_OK. Call it right after the
    failing call, on the same thread: parley_last_error() is thread-local."""
    if status != 0:
        raise error_for(status, _library.lib().parley_last_error().decode(errors="replace"))
