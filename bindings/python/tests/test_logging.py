"""The library's log lines reach a Python callback."""

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
