"""What Engine and Session share: a C handle freed exactly once, by close() or at collection."""

import contextlib
import threading
import weakref

from . import _interrupts
from .errors import MisuseError


class NativeHandle:
    """Owns one C handle. `kind` names it in messages ("engine", "session")."""

    def __init__(self, lib, handle, close_function, kind):
        self._lib = lib
        self._handle = handle
        self._kind = kind
        # Holds the raw handle and the function only, never self, so it can run at collection.
        self._closer = weakref.finalize(self, close_function, handle)
        # Guards _handle and _uses: close() and calls from other threads may race.
        self._close_lock = threading.Lock()
        # Calls into C under way with the handle (see _use). The library keys its handles by
        # address, and a freed address may be given to the next handle created: freeing this
        # one while a call is between reading it and reaching the library would send that
        # call to another object. So close() then leaves the freeing to the last such call.
        self._uses = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce_ex__(self, protocol):
        # A copy would share the handle, and closing either would free it under the other.
        raise TypeError("a parley.%s cannot be copied or pickled (it owns a library handle)"
                        % type(self).__name__)

    def close(self):
        """Closes the handle. Closing twice is a no-op."""
        with _interrupts.deferred():
            with self._close_lock:
                handle, self._handle = self._handle, None
                if handle is None:
                    return
                in_use = self._uses > 0
                if in_use:
                    # Under the lock: the call under way cannot end and free the handle
                    # first, leaving its address to a new handle that this stop would reach.
                    # The last such call frees it, as it returns.
                    self._stop(handle)
            if not in_use:
                self._closer()

    def _stop(self, handle):
        """Asks what runs in the library on the handle to end: close() was called meanwhile.
        Called under _close_lock, so it must not wait for that call to end."""

    @property
    def closed(self):
        return self._handle is None

    def _live(self):
        # A closed handle is never handed back to C: its address may belong to a new object.
        handle = self._handle
        if handle is None:
            raise MisuseError("the %s is closed" % self._kind)
        return handle

    @contextlib.contextmanager
    def _use(self):
        """The handle, for calls into C made in the block: close() does not free it before the
        block ends. Ctrl-C in the block raises KeyboardInterrupt at its end (_interrupts)."""
        with _interrupts.deferred():
            with self._close_lock:
                handle = self._live()
                self._uses += 1
            try:
                yield handle
            finally:
                with self._close_lock:
                    self._uses -= 1
                    last = self._uses == 0 and self._handle is None
                if last:
                    self._closer()
