"""Turns a callback-driven reply into an iterator.

The reply runs on a worker thread; the callback hands each piece to the consumer and waits
until the consumer asks for the next one. So the C call is paused inside its callback while
the loop body runs, exactly as if the body were the callback, and leaving the loop makes the
callback return non-zero, which stops the reply.
"""

import queue
import threading


class _Finished:
    def __init__(self, error):
        self.error = error


def stream_pieces(run):
    """run(on_piece, reply_so_far) performs the reply, calling on_piece(str) for each piece;
    on_piece returns truthy to stop it. Returns a generator of the pieces."""
    pieces = queue.SimpleQueue()  # worker -> consumer: str, then one _Finished
    go_on = queue.SimpleQueue()  # consumer -> worker: True = next piece, False = stop
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
        # Non-daemon: the interpreter waits for it at exit rather than killing a thread
        # that is inside the library.
        worker = threading.Thread(target=work, name="parley-stream")
        worker.start()
        try:
            while True:
                item = pieces.get()
                if isinstance(item, _Finished):
                    if item.error is not None:
                        raise item.error
                    return
                received.append(item)
                yield item
                go_on.put(True)
        finally:
            # Left early (or the reply ended): a waiting callback returns non-zero; an extra
            # False left in the queue is harmless.
            go_on.put(False)
            worker.join()

    return generate()
