"""Session.score_replies (since 0.5): how likely the model finds each of several replies to a
message, without generating and without changing the conversation; with message None (since
0.6), of what continue_reply() would generate."""

import dataclasses

import pytest

from conftest import GREEDY, HUGE

import parley

MESSAGE = "Once upon a time,"
REPLIES = ["there was a little girl named Lily.", "girl little Lily a there named was."]


def snapshot(s):
    return s.tokens, s.turns, s.info.n_tokens, s.info.n_turns


def test_a_likely_reply_scores_higher_than_a_jumbled_one(engine):
    with engine.session(template="raw") as s:
        scores = s.score_replies(MESSAGE, REPLIES)
        assert [type(x) for x in scores] == [parley.ReplyScore] * 2
        assert [x.text for x in scores] == REPLIES  # in the order given
        likely, jumbled = scores
        assert likely.logprob < 0 and jumbled.logprob < 0
        assert likely.logprob > jumbled.logprob + 10
        assert likely.n_tokens > 1 and jumbled.n_tokens > 1
        with pytest.raises(dataclasses.FrozenInstanceError):
            likely.logprob = 0.0


def test_scoring_the_end_adds_its_token(engine):
    with engine.session(template="raw") as s:
        without = s.score_replies(MESSAGE, REPLIES)
        with_end = s.score_replies(MESSAGE, REPLIES, with_end=True)
        for a, b in zip(without, with_end):
            assert b.n_tokens == a.n_tokens + 1  # EOS ends a "raw" reply
            assert b.logprob < a.logprob


def test_an_empty_reply_is_its_end_alone(engine):
    with engine.session(template="raw") as s:
        [empty] = s.score_replies(MESSAGE, [""])
        assert (empty.logprob, empty.n_tokens) == (0.0, 0)
        [end] = s.score_replies(MESSAGE, [""], with_end=True)
        assert end.n_tokens == 1
        assert end.logprob < 0


def test_scoring_changes_nothing(engine):
    with engine.session(template="raw") as s:
        s.send("The little dog", **GREEDY)
        before, stats = snapshot(s), s.last_stats
        first = s.score_replies(MESSAGE, REPLIES)
        assert s.score_replies(MESSAGE, REPLIES) == first  # the same again
        assert snapshot(s) == before
        assert s.last_stats is stats
        # The next send goes as in a session that never scored.
        reply = s.send(MESSAGE, **GREEDY)
        with engine.session(template="raw") as unscored:
            unscored.send("The little dog", **GREEDY)
            assert unscored.send(MESSAGE, **GREEDY) == reply
            assert unscored.tokens == s.tokens


def test_one_at_a_time_is_the_same_as_all_at_once(engine):
    replies = REPLIES + ["", "she had a big red ball."]
    with engine.session(template="raw") as s:
        for with_end in (False, True):
            together = s.score_replies(MESSAGE, replies, with_end=with_end)
            alone = [s.score_replies(MESSAGE, [r], with_end=with_end)[0] for r in replies]
            assert alone == together  # logprobs exactly equal, not merely close


def test_any_sequence_of_text_is_taken(engine):
    with engine.session(template="raw") as s:
        expected = s.score_replies(MESSAGE, REPLIES)
        assert s.score_replies(MESSAGE, tuple(REPLIES)) == expected
        assert s.score_replies(MESSAGE, (r for r in REPLIES)) == expected
        as_bytes = s.score_replies(MESSAGE.encode(), [r.encode() for r in REPLIES])
        assert [(x.logprob, x.n_tokens) for x in as_bytes] == \
            [(x.logprob, x.n_tokens) for x in expected]


def test_a_suspended_session_scores_as_before(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32") as e:
        with e.session(template="raw") as s:
            s.send("The little dog", **GREEDY)
            expected = s.score_replies(MESSAGE, REPLIES)
            s.suspend()
            assert s.info.kv_bytes_resident == 0
            assert s.score_replies(MESSAGE, REPLIES) == expected


@pytest.mark.parametrize("replies", [[], [""] * 257], ids=["none", "too-many"])
def test_the_library_says_how_many_replies_it_takes(engine, replies):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match="n_replies") as info:
            s.score_replies(MESSAGE, replies)
        assert info.value.status == 1
        assert s.info.n_tokens == 0


@pytest.mark.parametrize("message, replies, match", [
    (MESSAGE, [REPLIES[0], None], "must be a str"),  # refused before the library is called
    (b"bad \xc0\xaf", REPLIES, None),  # not UTF-8: the library refuses it
    (MESSAGE, [REPLIES[0], b"bad \xc0\xaf"], None),
    (MESSAGE, ["a\ud800b"], "Unicode"),  # a lone surrogate cannot be UTF-8
    (MESSAGE, ["a\0b"], "NUL"),
    (MESSAGE, [42], "must be a str"),
    (MESSAGE, REPLIES[0], "wrap it in a list"),  # a str is a sequence of one-letter replies
    (MESSAGE, 42, "sequence of str"),
], ids=["none-reply", "bad-utf8", "bad-utf8-reply", "surrogate", "nul", "int",
        "single-str", "not-a-sequence"])
def test_invalid_text_is_refused(engine, message, replies, match):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match=match) as info:
            s.score_replies(message, replies)
        assert info.value.status == 1
        assert info.value.message
        assert s.info.n_tokens == 0


@pytest.mark.parametrize("template", ["raw", "chatml"])
def test_no_message_scores_the_reply_a_rewind_dropped(engine, template):
    with engine.session(template=template) as fresh:
        expected = fresh.score_replies(MESSAGE, REPLIES, with_end=True)
    with engine.session(template=template) as s:
        s.send(MESSAGE, **GREEDY)
        s.rewind(1)
        before = snapshot(s)
        scores = s.score_replies(None, REPLIES, with_end=True)
        assert [x.text for x in scores] == REPLIES
        assert [x.n_tokens for x in scores] == [x.n_tokens for x in expected]
        # The same tokens over KV computed otherwise: close, not bit for bit.
        assert [x.logprob for x in scores] == \
            pytest.approx([x.logprob for x in expected], rel=1e-9)
        assert snapshot(s) == before


def test_no_message_scores_more_of_an_open_reply(engine):
    with engine.session(template="raw") as s:
        s.send("Once upon a time", temperature=0, max_tokens=4, ignore_eos=True)
        with s.fork() as twin:
            greedy = twin.continue_reply(temperature=0, max_tokens=8, ignore_eos=True)
        before = snapshot(s)
        continuations = [greedy, " girl little Lily a there named was.", ",", ""]
        scores = s.score_replies(None, continuations)
        assert [x.text for x in scores] == continuations
        assert all(x.logprob <= 0 for x in scores)
        assert scores[0].logprob > scores[1].logprob + 10  # the model's own words are likelier
        assert (scores[3].logprob, scores[3].n_tokens) == (0.0, 0)
        assert snapshot(s) == before


def test_no_message_with_nothing_to_go_on_from_is_refused(engine):
    for options in ({"template": "raw"}, {"template": "chatml", "system": "You tell stories."}):
        with engine.session(**options) as s:
            before = snapshot(s)
            with pytest.raises(parley.InvalidArgumentError) as info:
                s.score_replies(None, REPLIES)
            assert info.value.status == 1
            assert info.value.message  # the library's own message
            assert snapshot(s) == before


def test_a_reply_that_does_not_fit_leaves_nothing(engine):
    with engine.session(template="raw") as s:
        s.send("The little dog", **GREEDY)
        before = snapshot(s)
        with pytest.raises(parley.ContextFullError, match="reply 1") as info:
            s.score_replies(MESSAGE, [REPLIES[0], HUGE])
        assert info.value.status == 7
        assert snapshot(s) == before
        assert len(s.score_replies(MESSAGE, REPLIES)) == 2  # short ones still fit


def test_scoring_from_a_stream_loop_is_busy(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.BusyError) as info:
            for _ in s.stream("Once", **GREEDY):
                s.score_replies(MESSAGE, REPLIES)
        assert info.value.status == 8


def test_a_closed_session_is_misuse(engine):
    s = engine.session(template="raw")
    s.close()
    with pytest.raises(parley.MisuseError) as info:
        s.score_replies(MESSAGE, REPLIES)
    assert info.value.status == 15
