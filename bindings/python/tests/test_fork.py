"""After fork(), a child that goes on with a call or a stream its parent started raises
MisuseError at once, as the library does for every call on an inherited handle, instead of
waiting forever for a thread of the parent's, which the child does not have."""

import os
import signal
import threading
import time

import pytest

from conftest import GREEDY

import parley

# The child ends with one of these; the parent reads it from its exit status.
RAISED_MISUSE, RAISED_OTHER, RETURNED = 0, 3, 4

# fork() with threads running (the library's, the binding's workers) warns from 3.12 on.
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")


def exit_code_of(pid, timeout=10):
    """The exit code of child `pid`; a child still running after `timeout` s is killed and
    the test fails: it hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the child of fork() still waited after %d s" % timeout)


def outcome(call):
    """What call() did: RETURNED, RAISED_MISUSE or RAISED_OTHER (in a child, whatever it is:
    it must end by os._exit, never go back into pytest)."""
    try:
        call()
        return RETURNED
    except parley.MisuseError:
        return RAISED_MISUSE
    except BaseException:  # noqa: B902 - a child must never go back into pytest
        return RAISED_OTHER


def test_a_stream_the_parent_started_raises_misuse_in_the_child(engine):
    s = engine.session(template="raw")
    it = s.stream("Once", **GREEDY)
    first = next(it)
    pid = os.fork()
    if pid == 0:
        os._exit(outcome(lambda: next(it)))
    assert exit_code_of(pid) == RAISED_MISUSE
    assert first + "".join(it) == s.turns[-1][1]  # the parent's stream goes on


def test_a_fork_inside_on_text_raises_misuse_from_the_childs_send(engine):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("send() hands its call to a worker only from the main thread")
    s = engine.session(template="raw")
    parent, children = os.getpid(), []

    def on_text(piece):
        if not children:
            children.append(os.fork())

    # Both processes return from on_text: the parent's send goes on, the child's has no
    # worker to wait for.
    result = outcome(lambda: s.send("Once", on_text=on_text, **GREEDY))
    if os.getpid() != parent:
        os._exit(result)
    assert result == RETURNED
    assert exit_code_of(children[0]) == RAISED_MISUSE
    assert s.last_stats.stop_reason == "max_tokens"  # the parent's send went on
