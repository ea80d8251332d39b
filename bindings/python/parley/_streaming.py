"""Turns a callback-driven reply into an iterator.

The reply runs on a worker thread; the callback hands each piece to the consumer and waits
until the consumer asks for the next one. So the C call is paused inside its callback while
the loop body runs, exactly as if the body were the callback, and closing the generator
(which leaving a loop that holds its only reference does) makes the callback return non-zero,
which stops the reply. A generator held elsewhere stays paused until it is closed or
collected: Python tells a generator nothing when a loop over it is left. In a child of fork()
a stream its parent started raises MisuseError: its worker is the parent's.
"""

import os
import queue
import threading
import weakref

from . import _calls, _interrupts


class _Finished:
    def __init__(self, error):
        self.error = error


# The stop queues of the streams whose worker runs. A stream left half-read (an iterator kept
# somewhere, never finished) pauses its worker inside the library; at interpreter exit it is
# told to stop, so that the reply ends and the worker can be joined instead of hanging the
# exit. threading._register_atexit runs before the interpreter joins its threads (the
# standard library's executors rely on it); without it the worker is a daemon thread.
_running = weakref.WeakSet()
_stop_at_exit = hasattr(threading, "_register_atexit")


class _StopQueue(queue.SimpleQueue):
    """consumer -> worker: True = next piece, False = stop (weakly referenceable)."""


def _stop_running_streams():
    for go_on in list(_running):
        go_on.put(False)


if _stop_at_exit:
    threading._register_atexit(_stop_running_streams)


# How often stop() is repeated while a stopped reply has not ended: the library forgets an
# interrupt that came before the reply took the session.
_RESTOP_S = 0.05


def stream_pieces(run, opened=None, ended=None, stop=None):
    """run(on_piece, reply_so_far) performs the reply, calling on_piece(str) for each piece;
    on_piece returns True to stop it. Returns a generator of the pieces. opened() is called
    when the reply starts (the first next()), ended() once it is over and its worker done.
    stop() stops a reply left early between pieces (while the message is still read)."""
    pieces = queue.SimpleQueue()  # worker -> consumer: str, then one _Finished
    go_on = _StopQueue()
    received = []

    def on_piece(piece):
        pieces.put(piece)
        return not go_on.get()

    def work():
        try:
            run(on_piece, lambda: "".join(received))
            pieces.put(_Finished(None))
        except BaseException as e:  # noqa: B902 - handed to the consumer, raised there
            pieces.put(_Finished(e))

    def generate():
        # Non-daemon where possible: at exit the reply is stopped and the thread joined,
        # rather than killed while it is inside the library.
        worker = threading.Thread(target=work, name="parley-stream", daemon=not _stop_at_exit)
        started = finished = False
        pid = os.getpid()  # the process the worker runs in
        _running.add(go_on)
        try:
            # Ctrl-C inside start() could leave a running worker that join() refuses: it is
            # raised after it instead, where the finally below stops the worker.
            with _interrupts.deferred():
                worker.start()
                started = True
            if opened is not None:
                opened()
            while True:
                item = _calls.next_item(pieces, pid)
                if isinstance(item, _Finished):
                    finished = True
                    if item.error is not None:
                        raise item.error
                    return
                received.append(item)
                yield item
                go_on.put(True)
        finally:
            # Left early (or the reply ended): a waiting callback returns non-zero; an extra
            # False left in the queue is harmless; a reply between pieces is stopped. Ctrl-C
            # meanwhile waits for the worker, which stops at the next token or chunk read.
            with _interrupts.deferred():
                go_on.put(False)
                while started and worker.is_alive():
                    if not finished and stop is not None:
                        stop()
                    worker.join(_RESTOP_S)
                _running.discard(go_on)
                if ended is not None:
                    ended()

    return generate()
