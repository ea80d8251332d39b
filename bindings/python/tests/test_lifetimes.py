"""Handles closed or collected in any order never crash: the library keeps a closed engine
alive until its last session closes."""

import copy
import gc
import pickle
import subprocess
import sys
import threading

import pytest

from conftest import BINDINGS_DIR, GREEDY

import parley

LONG = dict(temperature=0, max_tokens=0, ignore_eos=True)  # to the context's end


def test_engine_closed_before_its_session(model_path):
    for _ in range(20):
        e = parley.Engine(model_path)
        s = e.session(template="raw")
        e.close()
        assert s.send("Once", **GREEDY)  # the session outlives the closed engine
        s.close()


def test_sessions_dropped_without_close(model_path):
    with parley.Engine(model_path) as e:
        for _ in range(20):
            s = e.session(template="raw")
            s.send("Once", **GREEDY)
            del s
            gc.collect()
        assert e.stats.sessions_active == 0


def test_engine_and_sessions_dropped_together(model_path):
    for _ in range(20):
        e = parley.Engine(model_path)
        sessions = [e.session(template="raw") for _ in range(3)]
        sessions[0].send("Once", **GREEDY)
        sessions.append(sessions[0].fork())
        del e  # the engine's finalizer may run before or after the sessions'
        gc.collect()
        del sessions
        gc.collect()


def test_a_half_read_stream_dropped_with_its_session(model_path):
    with parley.Engine(model_path) as e:
        for _ in range(10):
            s = e.session(template="raw")
            it = s.stream("Once", temperature=0, max_tokens=100, ignore_eos=True)
            next(it)
            del it, s
            gc.collect()
        assert e.stats.sessions_active == 0


def test_store_engine_closed_first_spills_open_sessions(model_path, tmp_path):
    store = tmp_path / "chats.sqlite"
    e = parley.Engine(model_path, store=store)
    s = e.session(id="kept", template="raw")
    s.send("Once", **GREEDY)
    e.close()
    s.close()
    with parley.Engine(model_path, store=store) as e2, e2.open_session("kept") as again:
        assert len(again.turns) == 2


def test_a_half_read_stream_kept_until_exit_does_not_hang_the_exit(model_path, tmp_path):
    # The iterator stays referenced to the end: at exit its reply is stopped (kept as the
    # turn) and its worker joined, instead of the interpreter waiting for it forever.
    script = tmp_path / "half_read.py"
    script.write_text(
        "import sys\n"
        "sys.path.insert(0, %r)\n"
        "import parley\n"
        "engine = parley.Engine(%r, store=%r)\n"
        "session = engine.session(id='kept', template='raw')\n"
        "it = session.stream('Once', temperature=0, max_tokens=100, ignore_eos=True)\n"
        "print(next(it), flush=True)\n"
        % (str(BINDINGS_DIR), str(model_path), str(tmp_path / "chats.sqlite")))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite") as e:
        with e.open_session("kept") as again:
            assert [role for role, _ in again.turns] == ["user", "assistant"]


class HookedLibrary:
    """The library, but for `name`, before which `hook` runs: after the binding has taken the
    handle for the call, before the library is given it."""

    def __init__(self, lib, name, hook):
        self._lib, self._name, self._hook = lib, name, hook

    def __getattr__(self, attr):
        function = getattr(self._lib, attr)
        if attr != self._name:
            return function

        def hooked(*args):
            self._hook()
            return function(*args)
        return hooked


def test_a_call_racing_close_never_reaches_another_session(engine):
    a = engine.session(template="raw")
    address = a._handle
    others = []

    def close_and_create():
        a.close()
        # The library knows handles by address, and gives a freed one to a later session.
        while len(others) < 64 and address not in [o._handle for o in others]:
            others.append(engine.session(template="raw"))

    a._lib = HookedLibrary(a._lib, "parley_session_add_exchange", close_and_create)
    try:
        a.add_exchange("from a", " reply")
    except parley.MisuseError:
        pass  # the other outcome allowed: never another session's
    assert [o.turns for o in others] == [[]] * len(others)
    assert address not in [o._handle for o in others]  # a's until the call was over
    assert a.closed and engine.stats.sessions_active == len(others)  # and then a was freed


def test_closing_an_engine_lets_a_call_under_way_end_on_it(model_path):
    # The library's rule: closing an engine never overlaps another call on it.
    e = parley.Engine(model_path)
    e._lib = HookedLibrary(e._lib, "parley_engine_get_stats", e.close)
    assert e.stats.sessions_active == 0
    assert e.closed
    with pytest.raises(parley.MisuseError):
        e.stats


@pytest.mark.parametrize("copy_of", [copy.copy, copy.deepcopy, pickle.dumps])
def test_engines_and_sessions_are_not_copied(engine, copy_of):
    # A copy would share the handle: closing one would free it under the other.
    s = engine.session(template="raw")
    for handle in (engine, s):
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            copy_of(handle)
    assert s.send("Once", **GREEDY)


def test_close_from_another_thread_stops_the_reply_and_frees_the_session(engine):
    s = engine.session(template="raw")
    started, outcome = threading.Event(), []

    def reply():
        try:
            s.send("Once", on_text=lambda piece: started.set(), **LONG)
        except parley.CancelledError as e:
            outcome.append(e)

    worker = threading.Thread(target=reply)
    worker.start()
    started.wait()
    s.close()
    worker.join()
    assert outcome and outcome[0].reply
    assert s.closed and engine.stats.sessions_active == 0


def test_close_from_the_sessions_own_callback_stops_the_reply_and_frees_it(engine):
    s = engine.session(template="raw")
    with pytest.raises(parley.CancelledError) as info:
        s.send("Once", on_text=lambda piece: s.close(), **LONG)
    assert info.value.reply
    assert s.closed and engine.stats.sessions_active == 0
    with pytest.raises(parley.MisuseError):
        s.info


def test_close_while_a_stream_is_paused_stops_its_reply_and_frees_the_session(engine):
    s = engine.session(template="raw")
    it = s.stream("Once", **LONG)
    first = next(it)
    s.close()
    assert s.closed
    with pytest.raises(parley.CancelledError) as info:
        list(it)
    assert info.value.reply.startswith(first)
    assert engine.stats.sessions_active == 0


def test_close_never_stops_a_newer_session_at_the_same_address(engine, monkeypatch):
    # close() of a session whose call is under way stops that call. Here the thread running
    # close() is held back at the stop: were the stop made where the call could meanwhile end
    # and free the session, a new session given the same address would be stopped instead.
    a = engine.session(template="raw")
    address = a._handle
    closing, b_replies, stopped = threading.Event(), threading.Event(), threading.Event()
    a_done = threading.Event()
    stop = a._stop

    def held_stop(handle):
        closing.set()
        b_replies.wait(2)  # for as long as a new session's reply may take to begin
        stop(handle)
        stopped.set()

    monkeypatch.setattr(a, "_stop", held_stop)

    def first_piece_closes_a(piece):
        threading.Thread(target=a.close).start()
        closing.wait(10)
        return True  # a's reply ends now; its call, as it returns, frees a

    def reply_of_a():
        try:
            a.send("Once", on_text=first_piece_closes_a, **LONG)
        except parley.CancelledError:
            pass
        finally:
            a_done.set()

    threading.Thread(target=reply_of_a).start()
    assert a_done.wait(10)
    others = []
    while len(others) < 300 and address not in [o._handle for o in others]:
        others.append(engine.session(template="raw"))
    b = others[-1]
    if b._handle != address:
        pytest.skip("no new session was given the freed address")

    def on_text(piece):
        b_replies.set()
        stopped.wait(10)  # the reply goes on once close() has made its stop

    assert b.send("Once", on_text=on_text, **GREEDY)
    assert b.last_stats.stop_reason != "cancelled"
    assert stopped.is_set() and a.closed
