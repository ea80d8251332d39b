"""Session.prepare (since 0.5): the work the next turn would begin with, done ahead of it. A
new conversation computes its opening, a stored one gets its KV back; replies are the same
with or without it."""

import pytest

from conftest import GREEDY

import parley

# Long enough for the opening to fill at least one whole block of 16 tokens.
SYSTEM = ("You are a storyteller who tells short, kind stories about the animals that live "
          "in a big green forest.")
MESSAGES = ["Tell me a story.", "And then?"]
BLOCK = 16  # tokens per KV block: the opening is held in whole blocks


def assert_no_reply(stats):
    assert isinstance(stats, parley.TurnStats)
    assert (stats.prompt_tokens, stats.generated_tokens) == (0, 0)
    assert (stats.ttft_ms, stats.tpot_ms) == (0, 0)
    assert stats.stop_reason is None
    assert stats.stop_index is None


@pytest.mark.parametrize("template", ["raw", "chatml"])
def test_a_new_conversation_computes_its_opening_for_the_first_turn(engine, template):
    with engine.session(system=SYSTEM, template=template, scope="prepared") as s:
        stats = s.prepare()
        assert_no_reply(stats)
        assert stats.kv_source == "new"
        assert stats.computed_tokens > 0
        assert stats.computed_tokens % BLOCK == 0
        assert stats.restore_ms == 0
        assert s.last_stats is None  # prepare replies nothing

        again = s.prepare()  # nothing left to do
        assert_no_reply(again)
        assert again.computed_tokens == 0

        reply = s.send(MESSAGES[0], **GREEDY)
        assert s.last_stats.reused_tokens >= stats.computed_tokens

        # Another scope shares no KV with it: this one computes everything itself.
        with engine.session(system=SYSTEM, template=template, scope="unprepared") as plain:
            assert plain.send(MESSAGES[0], **GREEDY) == reply
            assert plain.last_stats.reused_tokens == 0
            assert plain.tokens == s.tokens


def test_a_conversation_under_way_has_nothing_left_to_prepare(engine):
    with engine.session(system=SYSTEM, template="raw") as s:
        s.send(MESSAGES[0], **GREEDY)
        last = s.last_stats
        stats = s.prepare()
        assert_no_reply(stats)
        assert stats.kv_source == "resident"
        assert stats.computed_tokens == 0
        assert stats.reused_tokens > 0
        assert s.last_stats is last


def test_a_reopened_session_gets_its_kv_back_before_its_turn(model_path, tmp_path):
    store = tmp_path / "chats.sqlite"
    with parley.Engine(model_path, store=store, kv="f32") as e:
        with e.session(id="story", system=SYSTEM, template="raw") as s:
            s.send(MESSAGES[0], **GREEDY)

    with parley.Engine(model_path, store=store, kv="f32") as e, e.open_session("story") as s:
        assert s.info.state == "spilled"
        stats = s.prepare()
        assert_no_reply(stats)
        assert stats.kv_source == "restored"
        assert stats.restore_ms >= 0
        # All but the last token: the next turn computes that one with its message.
        assert stats.reused_tokens + stats.computed_tokens == s.info.n_tokens - 1
        assert s.info.state == "active"

        reply = s.send(MESSAGES[1], **GREEDY)
        assert s.last_stats.kv_source == "resident"
        assert s.last_stats.restore_ms == 0
        tokens = s.tokens

    # The same as a conversation that never left memory.
    with parley.Engine(model_path, kv="f32") as e:
        with e.session(system=SYSTEM, template="raw") as s:
            s.send(MESSAGES[0], **GREEDY)
            assert s.send(MESSAGES[1], **GREEDY) == reply
            assert s.tokens == tokens


def test_a_suspended_session_gets_its_kv_back(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32") as e:
        with e.session(template="raw") as s:
            s.send("Once upon a time", **GREEDY)
            s.suspend()
            assert s.info.kv_bytes_resident == 0
            stats = s.prepare()
            assert stats.kv_source == "restored"
            assert s.info.kv_bytes_resident > 0
            s.send(" Then", **GREEDY)
            assert s.last_stats.kv_source == "resident"
            assert s.last_stats.restore_ms == 0


def test_preparing_from_a_stream_loop_is_busy(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.BusyError) as info:
            for _ in s.stream("Once", **GREEDY):
                s.prepare()
        assert info.value.status == 8


def test_a_closed_session_is_misuse(engine):
    s = engine.session(system=SYSTEM, template="raw")
    s.close()
    with pytest.raises(parley.MisuseError) as info:
        s.prepare()
    assert info.value.status == 15
