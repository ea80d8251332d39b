"""Ctrl-C (a real SIGINT) during a call into the library raises KeyboardInterrupt from the call
and leaves the session usable; during Engine(...) it stops the load, and no engine is left."""

import contextlib
import os
import signal
import sys
import threading
import time
import types

import pytest

from conftest import GREEDY

import parley
from parley import _streaming

# A reply that runs to the end of the context unless something stops it.
LONG = dict(temperature=0, max_tokens=0, ignore_eos=True)


# Python's own SIGINT handler in every test (conftest.py).
pytestmark = pytest.mark.usefixtures("default_ctrl_c_handling")


@contextlib.contextmanager
def sigint_while_in_the_library():
    """Yields arm(): called from on_text, it has a SIGINT sent once on_text has returned,
    while the library computes the next token, so that it is pending as the next on_text is
    entered: the first bytecode of a ctypes callback, where no try in it can catch it.

    A helper thread sends it. It needs the GIL to run, which the main thread, with a switch
    interval longer than the test, gives up only by leaving Python: by returning into the
    library."""
    go = threading.Event()
    armed = []

    def send():
        go.wait()
        if armed:
            os.kill(os.getpid(), signal.SIGINT)

    def arm():
        armed.append(True)
        go.set()

    helper = threading.Thread(target=send)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(60)
    helper.start()
    try:
        yield arm
    finally:
        go.set()  # when not armed, the helper ends without a SIGINT
        try:
            helper.join()
        finally:
            sys.setswitchinterval(interval)


def arm_on_first_piece(arm):
    armed = []

    def on_text(piece):
        if not armed:
            armed.append(True)
            arm()
    return on_text


@pytest.mark.parametrize("call", ["send", "continue_reply"])
def test_ctrl_c_during_a_reply_raises_keyboard_interrupt(engine, call):
    s = engine.session(template="raw")
    if call == "continue_reply":
        s.send("Once", max_tokens=2, temperature=0)
    n_ctx = engine.model_info.context_length
    with sigint_while_in_the_library() as arm:
        with pytest.raises(KeyboardInterrupt):
            getattr(s, call)(**({"text": "Once"} if call == "send" else {}),
                             on_text=arm_on_first_piece(arm), **LONG)
    # The reply stopped there and was kept, as a cancelled one is.
    assert s.last_stats.stop_reason == "cancelled"
    assert 0 < s.last_stats.generated_tokens < n_ctx // 2
    assert s.turns[-1][0] == "assistant" and s.turns[-1][1]
    assert s.send(" more", **GREEDY)  # and the session is free


def test_ctrl_c_in_the_callback_itself_raises_keyboard_interrupt(engine):
    s = engine.session(template="raw")
    with pytest.raises(KeyboardInterrupt):
        s.send("Once", on_text=lambda piece: signal.raise_signal(signal.SIGINT), **LONG)
    assert s.last_stats.stop_reason == "cancelled"
    assert s.send(" more", **GREEDY)


def test_ctrl_c_from_a_nested_call_stops_both_replies(engine):
    outer, inner = engine.session(template="raw"), engine.session(template="raw")
    with sigint_while_in_the_library() as arm:
        def on_text(piece):
            if not inner.turns:
                inner.send("Once", on_text=arm_on_first_piece(arm), **LONG)
        with pytest.raises(KeyboardInterrupt):
            outer.send("Once", on_text=on_text, **LONG)
    assert inner.last_stats.stop_reason == outer.last_stats.stop_reason == "cancelled"


def test_ctrl_c_as_a_stream_starts_stops_its_reply(engine, monkeypatch):
    class InterruptedStart(threading.Thread):
        def start(self):
            super().start()
            signal.raise_signal(signal.SIGINT)  # lands as start() returns, worker running

    monkeypatch.setattr(_streaming.threading, "Thread", InterruptedStart)
    s = engine.session(template="raw")
    with pytest.raises(KeyboardInterrupt):
        for _ in s.stream("Once", **LONG):
            pass
    monkeypatch.undo()
    assert s.last_stats.stop_reason == "cancelled"
    assert s.send(" more", **GREEDY)  # not BusyError: the worker's reply is over


def test_ctrl_c_during_a_call_that_logs_is_raised_by_the_call(model_path):
    lines = []

    def on_log(level, message):
        if not lines:
            signal.raise_signal(signal.SIGINT)
        lines.append(message)

    parley.set_log_callback(on_log)
    try:
        with pytest.raises(KeyboardInterrupt):
            parley.Engine(model_path)
    finally:
        parley.set_log_callback(None)
    assert lines  # the callback ran on: the interrupt came after it


@pytest.fixture
def engine_opens(monkeypatch):
    """The status of each parley_engine_open and the engines it gave, then closed; after() is
    run on the opening thread as each open returns."""
    lib = parley._library.lib()
    open_engine, close_engine = lib.parley_engine_open, lib.parley_engine_close
    record = types.SimpleNamespace(statuses=[], opened=[], closed=[], after=lambda: None)

    def opening(options, out):
        status = open_engine(options, out)
        record.statuses.append(status)
        if status == 0:
            record.opened.append(out._obj.value)
        record.after()
        return status

    def closing(handle):
        record.closed.append(handle)
        close_engine(handle)

    monkeypatch.setattr(lib, "parley_engine_open", opening)
    monkeypatch.setattr(lib, "parley_engine_close", closing)
    return record


def sigint_to_the_main_thread_and_wait():
    """Ctrl-C as a terminal sends it, from a thread of the library's call: the main thread,
    waiting for the call, handles it meanwhile."""
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    time.sleep(0.5)


def stop_in_the_first_log_line():
    """Installs a log callback whose first line sends Ctrl-C; returns the lines it gets."""
    lines = []

    def on_log(level, message):
        if not lines:
            sigint_to_the_main_thread_and_wait()
        lines.append(message)
    parley.set_log_callback(on_log)
    return lines


def test_ctrl_c_stops_a_load(model_path, engine_opens):
    # On the CPU the first line says the engine is loaded, before the last report (1):
    # without a callback of the program's, the binding's own stops the load there.
    lines = stop_in_the_first_log_line()
    try:
        with pytest.raises(KeyboardInterrupt):
            parley.Engine(model_path, device="cpu")
    finally:
        parley.set_log_callback(None)
    assert lines and engine_opens.statuses == [parley.CancelledError.status]
    assert engine_opens.opened == []


def test_ctrl_c_stops_a_load_before_the_next_report(model_path, engine_opens):
    fractions = []
    lines = stop_in_the_first_log_line()
    try:
        with pytest.raises(KeyboardInterrupt):
            parley.Engine(model_path, device="cpu", on_load_progress=fractions.append)
    finally:
        parley.set_log_callback(None)
    assert lines and engine_opens.statuses == [parley.CancelledError.status]
    assert fractions and 1.0 not in fractions  # the last report stopped it, unseen


def test_ctrl_c_in_on_load_progress_stops_the_load(model_path, engine_opens):
    fractions = []

    def on_load_progress(fraction):
        fractions.append(fraction)
        signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        parley.Engine(model_path, on_load_progress=on_load_progress)
    assert fractions == [0.0]
    assert engine_opens.statuses == [parley.CancelledError.status]


class Quit(Exception):
    pass


def test_a_sigint_handler_of_the_programs_stops_a_load(model_path, engine_opens):
    def handler(signum, frame):
        raise Quit

    signal.signal(signal.SIGINT, handler)
    lines = stop_in_the_first_log_line()
    try:
        with pytest.raises(Quit):
            parley.Engine(model_path, device="cpu")
    finally:
        parley.set_log_callback(None)
    assert lines and engine_opens.statuses == [parley.CancelledError.status]


def test_ctrl_c_as_a_load_ends_closes_the_engine(model_path, engine_opens):
    # The last report said go on, and the Ctrl-C came as the open returned.
    engine_opens.after = sigint_to_the_main_thread_and_wait
    with pytest.raises(KeyboardInterrupt):
        parley.Engine(model_path)
    assert engine_opens.statuses == [0]
    assert engine_opens.closed == engine_opens.opened != []


def test_the_sigint_handler_is_restored(engine):
    s = engine.session(template="raw")
    s.send("Once", **GREEDY)
    for _ in s.stream(" more", **GREEDY):
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
