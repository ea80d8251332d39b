"""Session.count_tokens (since 0.4): what a send would add before its reply, measured before
it is sent, agrees with what the send then reports, and says when a message will not fit."""

import pytest

from conftest import GREEDY, HUGE

import parley

SYSTEM = "You tell stories."
MESSAGES = ["Tell me a story.", "And then?"]


def snapshot(s):
    return s.tokens, s.turns, s.info.n_tokens, s.info.n_turns


@pytest.mark.parametrize("template", ["raw", "llama2", "chatml"])
def test_the_count_is_what_the_send_reports(engine, template):
    context_length = engine.model_info.context_length
    with engine.session(system=SYSTEM, template=template) as s:
        # The first message comes after the system prompt; the second closes a reply cut at
        # max_tokens, which its count includes.
        for text in MESSAGES:
            before = s.info.n_tokens
            count = s.count_tokens(text)
            assert isinstance(count, parley.TokenCount)
            assert count.prompt_tokens > 0
            assert count.context_left == context_length - before - count.prompt_tokens
            s.send(text, **GREEDY)
            assert s.last_stats.prompt_tokens == count.prompt_tokens
            assert s.info.n_tokens == (before + count.prompt_tokens
                                       + s.last_stats.generated_tokens)


def test_the_count_after_a_rewound_reply_is_what_the_send_reports(engine):
    with engine.session(system=SYSTEM, template="chatml") as s:
        s.send(MESSAGES[0], **GREEDY)
        s.rewind(1)  # a user message without its reply
        count = s.count_tokens(MESSAGES[1])
        s.send(MESSAGES[1], **GREEDY)
        assert s.last_stats.prompt_tokens == count.prompt_tokens


def test_counting_changes_nothing(engine):
    with engine.session(system=SYSTEM, template="chatml") as s:
        s.send(MESSAGES[0], **GREEDY)
        before, stats = snapshot(s), s.last_stats
        first = s.count_tokens(MESSAGES[1])
        assert s.count_tokens(MESSAGES[1]) == first  # the same again
        assert snapshot(s) == before
        assert s.last_stats is stats
        # The next send goes as in a session that never counted.
        reply = s.send(MESSAGES[1], **GREEDY)
        with engine.session(system=SYSTEM, template="chatml") as uncounted:
            uncounted.send(MESSAGES[0], **GREEDY)
            assert uncounted.send(MESSAGES[1], **GREEDY) == reply
            assert uncounted.tokens == s.tokens


def test_a_message_that_does_not_fit_leaves_nothing(engine):
    context_length = engine.model_info.context_length
    with engine.session(template="raw") as s:
        s.send("The little dog", **GREEDY)
        before = snapshot(s)
        count = s.count_tokens(HUGE)
        assert count.prompt_tokens > context_length
        assert count.context_left == 0
        with pytest.raises(parley.ContextFullError) as info:
            s.send(HUGE, **GREEDY)
        assert info.value.status == 7
        assert snapshot(s) == before
        assert s.count_tokens("Once").context_left > 0  # a short one still fits


def test_the_text_is_taken_as_send_takes_it(engine):
    with engine.session(template="raw") as s:
        assert s.count_tokens(b"Once upon a time") == s.count_tokens("Once upon a time")
        assert s.count_tokens("").context_left > 0


@pytest.mark.parametrize("text, match", [
    (None, "must be a str"),  # refused before the library is called
    (b"bad \xc0\xaf", None),  # not UTF-8: the library refuses it
    ("a\ud800b", "Unicode"),  # a lone surrogate cannot be UTF-8
    ("a\0b", "NUL"),
    (42, "must be a str"),
], ids=["none", "bad-utf8", "surrogate", "nul", "int"])
def test_invalid_text_is_refused_as_send_refuses_it(engine, text, match):
    with engine.session(template="raw") as s:
        for call in (s.count_tokens, s.send):
            with pytest.raises(parley.InvalidArgumentError, match=match) as info:
                call(text)
            assert info.value.status == 1
            assert info.value.message
        assert s.info.n_turns == 0


def test_counting_from_a_stream_loop_is_busy(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.BusyError) as info:
            for _ in s.stream("Once", **GREEDY):
                s.count_tokens("again")
        assert info.value.status == 8


def test_a_closed_session_is_misuse(engine):
    s = engine.session(template="raw")
    s.close()
    with pytest.raises(parley.MisuseError) as info:
        s.count_tokens("Once")
    assert info.value.status == 15
