"""Ctrl-C while the library reads a long message (no text comes back yet, so no callback
runs): send, stream, prepare and score_replies stop there and raise at once, as interrupt()
stops them; a program's own SIGINT handler's exception propagates from the call."""

import contextlib
import signal
import subprocess
import sys
import threading

import pytest

from conftest import BINDINGS_DIR, shared_file

import parley

# About 1800 tokens: several chunks of reading, each long enough to be interrupted in.
LONG = "hello world " * 300


def write_slow_model(path):
    """A model with the reference model's tokenizer and random weights, made larger than
    it, so that reading LONG takes about a second."""
    np = pytest.importorskip("numpy")
    sys.path.insert(0, str(shared_file("tools")))
    try:
        import gguf_io
    finally:
        sys.path.pop(0)
    reference = gguf_io.GGUFFile(shared_file("models/stories260k/stories260k-f32.gguf"))
    dim, layers, ffn, heads, kv_heads, vocab = 256, 4, 768, 8, 4, 512
    head_dim = dim // heads
    shape = {"general.name": "slow", "llama.context_length": 2048,
             "llama.embedding_length": dim, "llama.block_count": layers,
             "llama.feed_forward_length": ffn, "llama.rope.dimension_count": head_dim,
             "llama.attention.head_count": heads, "llama.attention.head_count_kv": kv_heads}
    writer = gguf_io.GGUFWriter()
    for key, value in reference.kv.items():
        value_type, element_type = reference.kv_types[key]
        writer.add(key, value_type, shape.get(key, value), element_type)
    rng = np.random.default_rng(0)

    def weights(*dims):
        return (rng.standard_normal(dims) * 0.02).astype(np.float32)

    def ones(n):
        return np.ones(n, np.float32)

    writer.add_tensor("token_embd.weight", weights(vocab, dim), gguf_io.GGML_F32)
    for i in range(layers):
        for name, tensor in (("attn_norm", ones(dim)), ("attn_q", weights(dim, dim)),
                             ("attn_k", weights(kv_heads * head_dim, dim)),
                             ("attn_v", weights(kv_heads * head_dim, dim)),
                             ("attn_output", weights(dim, dim)), ("ffn_norm", ones(dim)),
                             ("ffn_gate", weights(ffn, dim)), ("ffn_up", weights(ffn, dim)),
                             ("ffn_down", weights(dim, ffn))):
            writer.add_tensor("blk.%d.%s.weight" % (i, name), tensor, gguf_io.GGML_F32)
    writer.add_tensor("output_norm.weight", ones(dim), gguf_io.GGML_F32)
    writer.write(str(path))


@pytest.fixture(scope="module")
def slow_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("slow") / "slow.gguf"
    write_slow_model(path)
    return path


@pytest.fixture
def slow_engine(slow_model):
    """One per test: a message read before would be found in the engine's prefix cache."""
    with parley.Engine(slow_model, threads=1) as e:
        yield e


# Python's own SIGINT handler in every test (conftest.py).
pytestmark = pytest.mark.usefixtures("default_ctrl_c_handling")


@contextlib.contextmanager
def sigint_once_reading(engine, to_main_thread=True):
    """Sends a SIGINT as soon as a call of the block has taken KV blocks for the message it
    reads, and so holds its session: while it reads the message. It goes to the main thread,
    as a terminal's Ctrl-C does, or with to_main_thread=False to the thread sending it, as
    the kernel may deliver a thread's os.kill of its own process: Python then runs the
    handler on the main thread, but nothing wakes that thread for it."""
    done = threading.Event()
    blocks_before = engine.stats.kv_blocks_used

    def watch():
        while not done.is_set():
            if engine.stats.kv_blocks_used != blocks_before:
                target = threading.main_thread() if to_main_thread else watcher
                signal.pthread_kill(target.ident, signal.SIGINT)
                return
            done.wait(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def assert_stopped_while_reading(session):
    stats = session.last_stats
    assert stats.stop_reason == "cancelled"
    assert stats.generated_tokens == 0
    assert stats.computed_tokens < stats.prompt_tokens  # the rest of it was never read
    assert session.turns[-2:] == [("user", LONG), ("assistant", "")]  # kept, as interrupt()
    session.rewind(2)
    assert session.send("Once", max_tokens=2, temperature=0)  # and the session is free


@pytest.mark.parametrize("to_main_thread", [True, False])
def test_ctrl_c_stops_a_send_reading_its_message(slow_engine, to_main_thread):
    with slow_engine.session(template="raw") as s:
        with sigint_once_reading(slow_engine, to_main_thread), pytest.raises(KeyboardInterrupt):
            s.send(LONG, max_tokens=4)
        assert_stopped_while_reading(s)


@pytest.mark.parametrize("to_main_thread", [True, False])
def test_ctrl_c_stops_a_stream_reading_its_message(slow_engine, to_main_thread):
    with slow_engine.session(template="raw") as s:
        with sigint_once_reading(slow_engine, to_main_thread), pytest.raises(KeyboardInterrupt):
            for _ in s.stream(LONG, max_tokens=4):
                pass
        assert_stopped_while_reading(s)


def test_ctrl_c_stops_prepare(slow_engine):
    with slow_engine.session(system=LONG, template="llama2") as s:
        with sigint_once_reading(slow_engine), pytest.raises(KeyboardInterrupt):
            s.prepare()
        # What it had computed is kept; the rest is left for the next turn.
        rest = s.prepare()
        assert rest.reused_tokens > 0 and rest.computed_tokens > 0


def test_a_handler_runs_and_raises_while_score_replies_still_runs(slow_engine):
    with slow_engine.session(template="raw") as s:
        busy = []

        def handler(signum, frame):
            try:
                s.count_tokens("x")
                busy.append(False)
            except parley.BusyError:
                busy.append(True)
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, handler)
        with sigint_once_reading(slow_engine), pytest.raises(KeyboardInterrupt):
            s.score_replies(LONG, ["a", "b"])
        assert busy == [True]  # it ran as the scoring went on, not once it was over
        assert s.turns == [] and s.score_replies("Once", ["a"])[0].n_tokens == 1


def test_a_handler_raising_system_exit_sets_the_exit_status(slow_model):
    # A program's handler that exits, as a command-line tool's does: ctypes would drop its
    # SystemExit were it raised in a callback of the call.
    script = (
        "import signal, sys, threading\n"
        "sys.path.insert(0, %r)\n"
        "import parley\n"
        "signal.signal(signal.SIGINT, lambda signum, frame: sys.exit(130))\n"
        "e = parley.Engine(%r, threads=1)\n"
        "s = e.session(template='raw')\n"
        "def watch():\n"
        "    while not e.stats.kv_blocks_used:\n"
        "        pass\n"
        "    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)\n"
        "threading.Thread(target=watch, daemon=True).start()\n"
        "s.send(%r, max_tokens=4, on_text=lambda piece: None)\n"
        "print('not stopped')\n" % (str(BINDINGS_DIR), str(slow_model), LONG))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 130, done.stderr
    assert "Exception ignored" not in done.stderr
    assert "not stopped" not in done.stdout


def test_interrupt_after_close_is_a_no_op(slow_engine):
    s = slow_engine.session(template="raw")
    s.close()
    assert s.interrupt() is None


def test_interrupt_racing_close_never_raises(slow_engine):
    # A watchdog thread may interrupt a session just as its owner closes it.
    for _ in range(50):
        s = slow_engine.session(template="raw")
        closer = threading.Thread(target=s.close)
        closer.start()
        s.interrupt()
        closer.join()
        s.interrupt()


def test_a_call_made_as_the_interpreter_exits_runs_where_it_is_made():
    # A __del__ collected at exit may still call in: no worker can serve it then (a daemon
    # thread is frozen, and starting one may never return), so it runs on its own thread.
    script = (
        "import sys\n"
        "sys.path.insert(0, %r)\n"
        "import parley\n"
        "e = parley.Engine(%r, threads=1)\n"
        "s = e.session(template='raw')\n"
        "s.send('Once', max_tokens=2, temperature=0.0)\n"
        "class Late:\n"
        "    def __del__(self):\n"
        "        try:\n"
        "            s.prepare()\n"
        "        except parley.ParleyError:\n"
        "            pass\n"
        "        print('late call done', flush=True)\n"
        "late = Late()\n"
        "late.cycle = late\n" % (str(BINDINGS_DIR),
                                str(shared_file("models/stories260k/stories260k-f32.gguf"))))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "late call done" in done.stdout
