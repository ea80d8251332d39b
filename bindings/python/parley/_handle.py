"""What Engine and Session share: a C handle freed exactly once, by close() or at collection."""

import threading
import weakref

from .errors import MisuseError


class NativeHandle:
    """Owns one C handle. `kind` names it in messages ("engine", "session")."""

    def __init__(self, lib, handle, close_function, kind):
        self._lib = lib
        self._handle = handle
        self._kind = kind
        # Holds the raw handle and the function only, never self, so it can run at collection.
        self._closer = weakref.finalize(self, close_function, handle)
        # close() and a call from another thread (interrupt()) may race: the lock keeps the
        # other call from handing C a handle that close() has just freed.
        self._close_lock = threading.Lock()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the handle. Closing twice is a no-op."""
        with self._close_lock:
            self._handle = None
            self._closer()

    @property
    def closed(self):
        return self._handle is None

    def _live(self):
        # A closed handle is never handed back to C: its address may belong to a new object.
        handle = self._handle
        if handle is None:
            raise MisuseError("the %s is closed" % self._kind)
        return handle
