"""Session.add_exchange: a user message and a reply the caller wrote join the conversation as
turns, tokenized by the library, and the model continues after them."""

import pytest

from conftest import GREEDY

import parley

USER = "Once upon a time,"
REPLY = "there was a big red dog. He liked to run."


def test_the_exchange_becomes_two_turns_and_a_send_follows(engine):
    with engine.session(template="raw") as s:
        s.add_exchange(USER, REPLY)
        assert s.turns == [("user", USER), ("assistant", REPLY)]
        assert s.info.n_turns == 2
        reply = s.send(" One day,", **GREEDY)
        assert reply
        assert s.last_stats.generated_tokens == GREEDY["max_tokens"]
        assert s.turns == [("user", USER), ("assistant", REPLY), ("user", " One day,"),
                           ("assistant", reply)]


def test_a_send_after_the_exchange_reuses_its_kv(engine):
    with engine.session(template="raw") as s:
        s.add_exchange(USER, REPLY)
        written = len(s.tokens)
        s.send(" One day,", **GREEDY)
        # The exchange's KV was computed by add_exchange, not by this send.
        assert s.last_stats.reused_tokens >= written - 1
        assert s.last_stats.kv_source == "resident"


def test_a_templated_session_adds_the_exchange_after_its_system_prompt(engine):
    with engine.session(system="You tell stories.", template="chatml") as s:
        s.add_exchange(USER, REPLY)
        assert s.turns[-2:] == [("user", USER), ("assistant", REPLY)]
        assert [role for role, _ in s.turns] == ["system", "user", "assistant"]
        assert s.send("What was its name?", **GREEDY)
        assert len(s.turns) == 5


def test_a_raw_reply_continues_the_text_its_space_starting_its_first_word(engine):
    with engine.session(template="raw") as s:
        s.send("The little dog", **GREEDY)
        before = s.tokens
        s.add_exchange(USER, " " + REPLY)
        after = s.tokens
        reply_ids = engine.tokenize(REPLY)
        assert reply_ids
        assert after[:len(before)] == before
        assert after[-len(reply_ids):] == reply_ids
        assert len(after) > len(before) + len(reply_ids)  # the user message lies between


def test_empty_texts_are_allowed(engine):
    with engine.session(template="raw") as s:
        s.add_exchange("", "")
        assert s.turns == [("user", ""), ("assistant", "")]
        assert s.send(USER, **GREEDY)


def test_rewinding_two_removes_the_exchange(engine):
    with engine.session(template="raw") as s:
        s.send("The little dog", **GREEDY)
        before, turns_before = s.tokens, s.turns
        s.add_exchange(USER, REPLY)
        s.rewind(2)
        assert s.tokens == before
        assert s.turns == turns_before
        # The session goes on as if the exchange had never been added.
        with engine.session(template="raw") as fresh:
            fresh.send("The little dog", **GREEDY)
            assert s.send(" The end.", **GREEDY) == fresh.send(" The end.", **GREEDY)


def test_rewinding_two_from_a_fresh_session_leaves_it_empty(engine):
    with engine.session(template="raw") as s:
        s.add_exchange(USER, REPLY)
        s.rewind(2)
        assert s.tokens == []
        assert s.turns == []


def test_text_that_is_not_unicode_is_refused(engine):
    with engine.session(template="raw") as s:
        s.add_exchange(USER, REPLY)
        for args in (("a\ud800b", REPLY), (USER, "a\ud800b")):
            with pytest.raises(parley.InvalidArgumentError, match="Unicode") as info:
                s.add_exchange(*args)  # a lone surrogate cannot be UTF-8
            assert info.value.status == 1
        with pytest.raises(parley.InvalidArgumentError, match="NUL"):
            s.add_exchange(USER, "a\0b")
        assert s.info.n_turns == 2


def test_none_is_an_invalid_argument(engine):
    with engine.session(template="raw") as s:
        for args in ((None, REPLY), (USER, None)):
            with pytest.raises(parley.InvalidArgumentError) as info:
                s.add_exchange(*args)
            assert info.value.status == 1
            assert "must be a str" in info.value.message  # refused before the library is called
        assert s.info.n_turns == 0


def test_a_reply_longer_than_the_context_is_context_full(engine):
    with engine.session(template="raw") as s:
        s.send("The little dog", **GREEDY)
        before, n_turns = s.tokens, s.info.n_turns
        with pytest.raises(parley.ContextFullError) as info:
            s.add_exchange(USER, "The dog ran and ran. " * 20000)  # 400 KB
        assert info.value.status == 7
        assert info.value.message
        assert s.info.n_turns == n_turns
        assert s.tokens == before
        assert s.send(" The end.", **GREEDY)  # still usable


def test_adding_an_exchange_from_a_stream_loop_is_busy(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.BusyError) as info:
            for _ in s.stream("Once", **GREEDY):
                s.add_exchange(USER, REPLY)
        assert info.value.status == 8
        assert s.info.n_turns == 2  # the stopped reply's turns only


def test_a_closed_session_is_misuse(engine):
    s = engine.session(template="raw")
    s.close()
    with pytest.raises(parley.MisuseError):
        s.add_exchange(USER, REPLY)
