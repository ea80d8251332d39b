"""Ctrl-C during a call into the library that nothing can stop.

Python raises KeyboardInterrupt for a SIGINT at the next bytecode the main thread runs.
During a call into the library that is the first bytecode of a ctypes callback (the log
callback), before any try in it can catch the exception: ctypes then prints and drops it,
and the library reads a return value that was never set. So around such calls (closing, the
short calls) the default SIGINT handler is swapped for one that only notes the signal, and
KeyboardInterrupt is raised once the call has returned. The calls that can be stopped (those
interrupt() stops, opening an engine) run on a worker instead when made from the main thread
(_calls), and are stopped by Ctrl-C at once.
"""

import signal
import threading

try:
    # The C module under signal: its functions skip signal's conversions to enums, which
    # take longer than the calls into the library they are around.
    import _signal as _handlers
except ImportError:  # pragma: no cover - another interpreter
    _handlers = signal

# Only the main thread touches these: the others' blocks change nothing.
_depth = 0          # blocks entered (calls nest through callbacks)
_noted = False      # a SIGINT came in one
_installed = False  # the outermost block put _note in place of signal.default_int_handler


def _note(signum, frame):
    global _noted
    _noted = True


def note():
    """Keeps a KeyboardInterrupt that a callback caught on the main thread for its call to
    raise; where no call defers one, re-raises it: it is then reported, not lost. On another
    thread it is dropped: Ctrl-C is the main thread's, and re-raised into ctypes it would only
    be printed, once per callback."""
    global _noted
    if threading.current_thread() is not threading.main_thread():
        return
    if _depth:
        _noted = True
    else:
        raise KeyboardInterrupt


class deferred:
    """A block in which, on the main thread with the default SIGINT handler, Ctrl-C raises
    KeyboardInterrupt only at the block's end. Elsewhere it changes nothing: signal handlers
    run on the main thread only, and a handler of the program's own is left alone."""

    __slots__ = ("_active",)

    def __enter__(self):
        global _depth, _installed
        self._active = threading.current_thread() is threading.main_thread()
        if not self._active:
            return self
        if _depth == 0:
            try:
                _installed = _handlers.getsignal(signal.SIGINT) is signal.default_int_handler
                if _installed:
                    _handlers.signal(signal.SIGINT, _note)
            except ValueError:  # not the main interpreter: signals are not ours to handle
                _installed = False
        _depth += 1
        return self

    def __exit__(self, *exc):
        global _depth, _noted, _installed
        if not self._active:
            return False
        _depth -= 1
        if _depth == 0 and _installed:
            _installed = False
            # Unless code in the block installed a handler of its own.
            if _handlers.getsignal(signal.SIGINT) is _note:
                _handlers.signal(signal.SIGINT, signal.default_int_handler)
        if _noted:
            _noted = False
            raise KeyboardInterrupt
        return False
