"""The library's log lines reach a Python callback."""

import sys
import threading

import pytest

import parley


def test_log_lines_reach_the_callback(model_path):
    lines = []

    def on_log(level, message):
        lines.append((level, message))
        raise RuntimeError("a failing log callback must not reach the library")

    parley.set_log_callback(on_log)
    try:
        with parley.Engine(model_path):
            pass
    finally:
        parley.set_log_callback(None)
    assert any(level == 2 and "stories260k" in message for level, message in lines), lines


@pytest.mark.parametrize("fn", ["not callable", 5], ids=repr)
def test_a_log_callback_that_is_not_callable_is_refused(model_path, fn):
    lines = []
    parley.set_log_callback(lambda level, message: lines.append(message))
    try:
        with pytest.raises(parley.InvalidArgumentError, match="callable"):
            parley.set_log_callback(fn)
        with parley.Engine(model_path):
            pass
    finally:
        parley.set_log_callback(None)
    assert lines  # the callback in force was kept


def test_a_keyboard_interrupt_the_callback_raises_on_another_thread_is_dropped(model_path,
                                                                               monkeypatch):
    # Ctrl-C is the main thread's: on another thread the callback's own KeyboardInterrupt is
    # dropped as any other exception is, not printed by ctypes for each line.
    unraisable, lines, opened = [], [], []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: unraisable.append(hook.exc_type))

    def on_log(level, message):
        lines.append(message)
        raise KeyboardInterrupt

    def open_engine():
        with parley.Engine(model_path):
            opened.append(True)

    parley.set_log_callback(on_log)
    try:
        opener = threading.Thread(target=open_engine)
        opener.start()
        opener.join()
    finally:
        parley.set_log_callback(None)
    assert lines and opened
    assert unraisable == []
