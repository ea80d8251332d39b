"""Open a model, send, stream, fork and rewind through Python; the greedy reply equals the C
library's reference."""

import io
import json
import os
import pathlib
import subprocess
import threading
import time

import pytest

from conftest import GREEDY, shared_file

import parley

PROMPT = "Once upon a time"


def golden(name):
    path = shared_file("golden/stories260k_greedy.jsonl")
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["name"] == name:
            return record
    raise AssertionError("no golden named %s in %s" % (name, path))


def parley_chat():
    """parley-chat from PARLEY_CHAT, else the build tree the library was loaded from."""
    path = os.environ.get("PARLEY_CHAT")
    if path:
        return pathlib.Path(path)
    candidate = pathlib.Path(parley.library_path()).resolve().parent.parent / "bin" / "parley-chat"
    if not candidate.is_file():
        pytest.skip("parley-chat not found beside %s; set PARLEY_CHAT" % parley.library_path())
    return candidate


def test_model_info(engine):
    info = engine.model_info
    assert info.architecture == "llama"
    assert info.n_vocab == 512
    assert info.context_length > 0


def test_greedy_turn_matches_golden(engine):
    g = golden("once_upon")
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, **GREEDY)
        assert s.tokens == g["prompt_ids"] + g["generated_ids"][:32]
        assert reply == engine.detokenize(g["generated_ids"][:32])
        assert s.last_stats.generated_tokens == 32
        assert s.turns == [("user", PROMPT), ("assistant", reply)]


def test_greedy_turn_matches_parley_chat(model_path):
    # Default (INT8) KV on both sides: the same library must give the same ids and text.
    run = subprocess.run([str(parley_chat()), "-m", str(model_path), "--template", "raw",
                          "--temp", "0", "--ignore-eos", "-n", "32", "-p", PROMPT, "--print-ids"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    text, ids_line = run.stdout.rstrip("\n").rsplit("\n", 1)
    c_ids = [int(i) for i in ids_line.removeprefix("ids:").split()]
    with parley.Engine(model_path, threads=2) as e, e.session(template="raw") as s:
        reply = s.send(PROMPT, **GREEDY)
        assert s.tokens[-32:] == c_ids
        assert reply == text


def test_stream_pieces_concatenate_to_the_reply(engine):
    with engine.session(template="raw") as a, engine.session(template="raw") as b:
        pieces = list(a.stream(PROMPT, **GREEDY))
        assert len(pieces) > 1
        assert "".join(pieces) == b.send(PROMPT, **GREEDY)
        assert a.tokens == b.tokens
        assert a.last_stats.generated_tokens == 32


def test_second_turn_reuses_the_first_turns_kv(engine):
    with engine.session(template="raw") as s:
        s.send(PROMPT, **GREEDY)
        first = len(s.tokens)
        s.send(" The end.", **GREEDY)
        assert s.last_stats.reused_tokens > 0
        assert s.last_stats.reused_tokens >= first - 16  # at most the last partial block again
        assert s.last_stats.kv_source == "resident"
        assert [role for role, _ in s.turns] == ["user", "assistant", "user", "assistant"]


def test_leaving_a_stream_early_stops_the_reply(engine):
    with engine.session(template="raw") as s:
        for n, _ in enumerate(s.stream(PROMPT, temperature=0, max_tokens=200, ignore_eos=True)):
            if n == 2:
                break
        assert s.last_stats.generated_tokens <= 4
        role, partial = s.turns[-1]
        assert role == "assistant" and partial
        s.send(" Then", **GREEDY)  # the stream's thread is done: the session is free


def test_an_unfinished_stream_that_is_dropped_stops_the_reply(engine):
    with engine.session(template="raw") as s:
        it = s.stream(PROMPT, temperature=0, max_tokens=200, ignore_eos=True)
        next(it)
        it.close()
        assert s.last_stats.generated_tokens <= 2
        s.send(" Then", **GREEDY)


def test_on_text_sees_each_piece_and_can_stop(engine):
    with engine.session(template="raw") as s:
        seen = []
        reply = s.send(PROMPT, **GREEDY, on_text=lambda p: seen.append(p) or len(seen) == 3)
        assert len(seen) == 3
        assert reply == "".join(seen)


@pytest.mark.parametrize("verdict", [1, 7, "stop", [True], None, False], ids=repr)
def test_only_true_from_on_text_stops_the_reply(engine, verdict):
    # A count (sys.stdout.write's), or any other value that is not True, goes on.
    with engine.session(template="raw") as s:
        seen = []
        reply = s.send(PROMPT, **GREEDY, on_text=lambda p: seen.append(p) or verdict)
        assert len(seen) > 1
        assert reply == "".join(seen)
        assert s.last_stats.generated_tokens == 32
        assert s.last_stats.stop_reason == "max_tokens"


def test_a_writers_write_as_on_text_gets_the_whole_reply(engine):
    with engine.session(template="raw") as s:
        out = io.StringIO()
        reply = s.send(PROMPT, **GREEDY, on_text=out.write)  # returns how much it wrote
        assert out.getvalue() == reply
        assert s.last_stats.stop_reason == "max_tokens"


def test_tokenize_round_trip(engine):
    ids = engine.tokenize(PROMPT, bos=True)
    assert ids == golden("once_upon")["prompt_ids"]
    assert engine.tokenize(PROMPT) == ids[1:]
    assert engine.detokenize(ids) == PROMPT
    assert engine.detokenize([]) == ""


def test_read_ids_asks_again_when_the_likely_room_is_short():
    from parley._buffers import read_ids
    produced = list(range(10))
    calls = []

    def call(ids, cap, needed):
        calls.append(cap)
        needed._obj.value = len(produced)
        for i in range(min(cap, len(produced))):
            ids[i] = produced[i]
        return 0

    assert read_ids(call, likely_cap=16) == produced and calls == [16]
    calls.clear()
    assert read_ids(call, likely_cap=4) == produced and calls == [4, 10]
    calls.clear()
    assert read_ids(call) == produced and calls == [0, 10]


def test_tokenize_of_text_of_many_ids_round_trips(engine):
    text = " ".join(["\U0001F600 \u00e9\u4e2d"] * 50)  # byte pieces: about one id per byte
    ids = engine.tokenize(text, bos=True)
    assert len(ids) > len(text)
    assert engine.detokenize(ids) == text


def test_fork_and_rewind(engine):
    with engine.session(template="raw", id="original") as s:
        s.send(PROMPT, **GREEDY)
        with s.fork("copy") as copy:
            assert copy.id == "copy"
            assert copy.tokens == s.tokens
            assert copy.turns == s.turns
            copy.send(" Later", **GREEDY)
            assert len(copy.turns) == 4 and len(s.turns) == 2
            copy.rewind(2)
            assert copy.turns == s.turns
            assert copy.tokens == s.tokens


def test_sampling_with_a_seed_repeats(engine):
    options = dict(temperature=0.8, seed=1234, max_tokens=24)
    with engine.session(template="raw") as a, engine.session(template="raw") as b:
        assert a.send(PROMPT, **options) == b.send(PROMPT, **options)


def test_engine_stats(engine):
    with engine.session(template="raw") as s:
        before = engine.stats
        s.send(PROMPT, **GREEDY)
        stats = engine.stats
        assert stats.sessions_active == 1
        assert stats.kv_blocks_used > 0
        assert stats.store_bytes == 0
        assert isinstance(stats.decode_steps, int) and isinstance(stats.decode_tokens, int)
        steps = stats.decode_steps - before.decode_steps
        assert steps > 0
        assert stats.decode_tokens - before.decode_tokens == steps  # alone: one token a step
        assert engine.sessions() == []  # no store


def test_sessions_on_several_threads_reply_as_they_do_alone(engine):
    prompts = ["Once upon a time", "The little dog", "A girl named Lily went to the park"]
    alone = []
    for p in prompts:
        with engine.session(template="raw") as s:
            alone.append(s.send(p, **GREEDY))
    before = engine.stats
    replies = [None] * len(prompts)
    all_streaming = threading.Barrier(len(prompts))

    def reply(i):
        with engine.session(template="raw") as s:
            pieces = []
            for piece in s.stream(prompts[i], **GREEDY):
                if not pieces:
                    all_streaming.wait(timeout=30)
                pieces.append(piece)
                time.sleep(0.0002)  # lets the other threads in on a machine with few cores
            replies[i] = "".join(pieces)

    threads = [threading.Thread(target=reply, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert replies == alone
    after = engine.stats
    tokens = after.decode_tokens - before.decode_tokens
    steps = after.decode_steps - before.decode_steps
    assert tokens == len(prompts) * (GREEDY["max_tokens"] - 1)
    assert steps < tokens  # some steps served two or three of them
