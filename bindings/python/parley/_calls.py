"""Calls into the library that can be stopped (those interrupt() stops, and opening an engine,
which its progress callback stops), made from the main thread, run on a worker.

Python runs signal handlers on the main thread only, between bytecodes: while that thread is
inside the library, Ctrl-C (or any other signal with a Python handler) waits for the call to
return, and in a ctypes callback the handler's exception would be dropped by ctypes. So the
main thread hands such a call to a worker thread and waits for it in a queue, where a signal
handler runs at once. The call's callbacks hand their work back: it runs on the waiting thread,
as plain Python code, so callbacks stay on the caller's thread. What the waiting thread raises
meanwhile (KeyboardInterrupt, a handler's SystemExit, an exception of on_item) stops the call
through stop(), waits for it to end (the library keeps what an interrupt keeps), and is then
raised. Other threads get no signals: their calls run where they are made.

After fork() the child has the waiting thread only, not the worker: a wait begun in the parent
(a fork in a callback) raises MisuseError in the child instead of waiting forever.
"""

import os
import queue
import sys
import threading

from . import _interrupts
from .errors import MisuseError

# What ask() returns once the waiting thread has stopped waiting: stop the call.
STOP = object()

# How often stop() is repeated while a stopped call has not ended: the library forgets an
# interrupt that came before the call took the session.
_RESTOP_S = 0.05

# How often a waiting main thread looks for signals. A signal ends the wait in a queue only
# when the kernel gives it to that thread (it may give another one a thread's os.kill of its
# own process) and once the wait has begun: one that comes as the thread is about to wait has
# its handler run by the thread's next bytecode, after the wait.
_LOOK_FOR_SIGNALS_S = 0.02

# Workers with no call, reused: starting a thread costs more than a short call. A call made
# from a callback (a nested one) starts another while this one waits in the library.
_idle = []


class _Worker:
    __slots__ = ("jobs",)

    def __init__(self):
        self.jobs = queue.SimpleQueue()
        # A daemon: it holds no call at exit, as the main thread waits for each one it hands.
        threading.Thread(target=self._serve, name="parley-call", daemon=True).start()

    def _serve(self):
        while True:
            self.jobs.get()()


def _forget_workers():
    _idle.clear()  # a child of fork() has none of its parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def forked_error(pid):
    """The MisuseError of a wait, in a child of fork(), for a thread of its parent `pid`."""
    return MisuseError("this call was started by process %d and runs on one of its threads; "
                       "after fork() a child opens its own engine" % pid)


def next_item(inbox, pid):
    """inbox.get(), looking for signals now and then (see _LOOK_FOR_SIGNALS_S). pid: the
    process whose thread feeds inbox; in another one (a child of fork()), where no thread
    does, raises MisuseError."""
    while True:
        try:
            return inbox.get(timeout=_LOOK_FOR_SIGNALS_S)
        except queue.Empty:
            # The loop's next round runs the handlers of signals that came meanwhile.
            if os.getpid() != pid:
                raise forked_error(pid) from None


def on_worker():
    """Whether calls from this thread go to a worker: on the main thread only, and not while
    the interpreter exits, when a worker may be frozen and starting one may never return."""
    return threading.current_thread() is threading.main_thread() and not sys.is_finalizing()


class _Call:
    """One call handed to a worker: its queues, and its outcome once done."""

    __slots__ = ("inbox", "answers", "stopping", "done", "result", "error", "pid")

    def __init__(self):
        self.pid = os.getpid()  # the process whose worker runs it
        self.inbox = queue.SimpleQueue()    # worker -> caller: items for on_item, then self
        self.answers = queue.SimpleQueue()  # caller -> worker: on_item's results, or STOP
        self.stopping = False
        # Set before self is put in the inbox: an exception raised as get() returns loses
        # the item it returned, so the wait after one cannot count on receiving self.
        self.done = False
        self.result = None
        self.error = None

    def ask(self, item):
        """On the worker: on_item(item), run by the waiting thread; STOP once it stopped."""
        if self.stopping:
            return STOP
        self.inbox.put(item)
        return self.answers.get()


def run(work, on_item, stop):
    """work(ask) on a worker thread; returns its result or raises its exception. ask(item)
    has the calling thread run on_item(item) and returns that (or STOP: see _Call.ask); ask
    is None when on_item is. Where no worker can start (at the interpreter's exit), work
    runs here, with on_item as ask."""
    call = _Call()
    handed = False
    try:
        # Ctrl-C here is raised at the block's end, once `handed` tells whether to wait.
        with _interrupts.deferred():
            worker = _hand(call, work, None if on_item is None else call.ask)
            if worker is None:
                return work(on_item)
            handed = True
        while True:
            item = next_item(call.inbox, call.pid)
            if item is call:
                break
            call.answers.put(on_item(item))
    except BaseException:  # noqa: B902 - whatever it is, the call must end before it rises
        if handed:
            _stop_and_wait(call, stop)
        raise
    if call.error is not None:
        raise call.error
    return call.result


def _hand(call, work, ask):
    """Gives work(ask) to an idle or a new worker; None when no thread can start."""
    if _idle:
        worker = _idle.pop()
    else:
        try:
            worker = _Worker()
        except RuntimeError:  # "can't create new thread at interpreter shutdown"
            return None

    def job():
        try:
            call.result = work(ask)
        except BaseException as e:  # noqa: B902 - handed to the caller
            call.error = e
        _idle.append(worker)
        call.done = True
        call.inbox.put(call)

    worker.jobs.put(job)
    return worker


def _stop_and_wait(call, stop):
    """Stops the call and waits for it to end. A further exception meanwhile (Ctrl-C again)
    does not leave it running: it is raised, in place of the first, once the call has ended.
    stop() raises nothing of its own."""
    later = None
    call.stopping = True
    # In a child of fork() the worker is the parent's: there is nothing to stop or wait for.
    while not call.done and os.getpid() == call.pid:
        try:
            call.answers.put(STOP)  # for an ask() already under way
            stop()
            call.inbox.get(timeout=_RESTOP_S)
        except queue.Empty:
            pass
        except BaseException as e:  # noqa: B902 - raised after the wait
            later = e
    if later is not None:
        raise later
