"""Errors after which the session keeps the turn (the KV budget running out during the reply,
a store that does not take the turn): the exception carries the kept reply as .reply, and
last_stats describes the turn, as for a CancelledError."""

import pytest

import parley

LONG = dict(temperature=0, max_tokens=0, ignore_eos=True)  # up to the context's end
BLOCKS = 4  # a KV budget of 4 blocks (64 tokens) runs out long before the context does


@pytest.fixture
def small_budget_engine(model_path):
    with parley.Engine(model_path, threads=1) as probe:
        block_bytes = 16 * probe.stats.kv_bytes_per_token
    with parley.Engine(model_path, threads=1, kv_budget=BLOCKS * block_bytes) as e:
        yield e


def test_send_out_of_kv_budget_mid_reply_keeps_the_reply(small_budget_engine):
    with small_budget_engine.session(template="raw") as s:
        pieces = []
        with pytest.raises(parley.OutOfMemoryError) as info:
            s.send("Once upon a time", **LONG, on_text=pieces.append)
        assert info.value.reply
        assert info.value.reply == "".join(pieces)
        assert s.turns[-1] == ("assistant", info.value.reply)
        stats = s.last_stats
        assert stats is not None
        assert stats.stop_reason == "out_of_memory"
        assert stats.prompt_tokens > 0
        assert 0 < stats.generated_tokens < BLOCKS * 16


def test_a_stream_out_of_kv_budget_mid_reply_keeps_the_reply(small_budget_engine):
    with small_budget_engine.session(template="raw") as s:
        pieces = []
        with pytest.raises(parley.OutOfMemoryError) as info:
            for piece in s.stream("Once upon a time", **LONG):
                pieces.append(piece)
        assert info.value.reply == "".join(pieces) != ""
        assert s.turns[-1] == ("assistant", info.value.reply)
        assert s.last_stats.stop_reason == "out_of_memory"


def test_a_continuation_out_of_kv_budget_keeps_the_new_text(small_budget_engine):
    with small_budget_engine.session(template="raw") as s:
        first = s.send("Once upon a time", temperature=0, max_tokens=4, ignore_eos=True)
        with pytest.raises(parley.OutOfMemoryError) as info:
            s.continue_reply(**LONG)
        assert info.value.reply
        assert s.turns[-1] == ("assistant", first + info.value.reply)
        assert s.last_stats.stop_reason == "out_of_memory"
        assert s.last_stats.prompt_tokens == 0


def test_out_of_kv_budget_before_the_reply_keeps_nothing(small_budget_engine):
    with small_budget_engine.session(template="raw") as full:
        with pytest.raises(parley.OutOfMemoryError):
            full.send("Once upon a time", **LONG)  # holds every block of the budget now
        with small_budget_engine.session(template="raw") as s:
            with pytest.raises(parley.OutOfMemoryError) as info:
                s.send("Tom had a dog", **LONG)
            assert info.value.reply is None
            assert s.last_stats is None
            assert s.turns == []


def test_a_turn_the_store_refuses_is_kept_with_its_reply(model_path, tmp_path):
    store = tmp_path / "chats.sqlite"
    greedy = dict(temperature=0, max_tokens=8, ignore_eos=True)
    with parley.Engine(model_path, store=store, threads=1) as e1, \
            parley.Engine(model_path, store=store, threads=1) as e2:
        with e1.session(id="shared", template="raw") as first:
            first.send("Once upon a time", **greedy)
        with e1.open_session("shared") as a, e2.open_session("shared") as b:
            a.send(" A", **greedy)  # b's copy of the conversation is now out of date
            with pytest.raises(parley.StorageError) as info:
                b.send(" B", **greedy)
            assert info.value.reply
            assert b.turns[-2:] == [("user", " B"), ("assistant", info.value.reply)]
            assert b.last_stats is not None
            assert b.last_stats.generated_tokens == 8
            assert b.last_stats.stop_reason == "max_tokens"
