"""Handles closed or collected in any order never crash: the library keeps a closed engine
alive until its last session closes."""

import gc
import subprocess
import sys

from conftest import BINDINGS_DIR, GREEDY

import parley


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
