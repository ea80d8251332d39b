"""Stop strings and why a reply ended (since 0.3): the reply ends before the first stop string
it shows, in what is streamed, returned and kept alike."""

import gc

import pytest

from conftest import GREEDY

import parley

PROMPT = "Once upon a time"


def greedy_reply(engine, **options):
    """The unstopped greedy reply and the conversation's token ids after it."""
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, **GREEDY, **options)
        assert s.last_stats.stop_reason == "max_tokens"
        return reply, s.tokens


def stops_from(reply):
    """Stop strings taken from the reply itself: a phrase from its end, one that never occurs,
    and a phrase from its middle (spanning a word boundary, so it likely spans tokens); and
    where the reply must end with them: before the earliest first occurrence of any."""
    words = reply.split(" ")
    assert len(words) >= 6, "the reply is too short to pick stop strings from: %r" % reply
    middle = len(words) // 2
    absent = "\u2603\u2603"
    assert absent not in reply
    stop = [" ".join(words[-2:]), absent, " " + " ".join(words[middle:middle + 2])]
    # At the same place the shortest wins (the first listed of equal ones), as in the library.
    found = [(reply.find(s), len(s), i) for i, s in enumerate(stop) if s in reply]
    cut, _, index = min(found)
    assert 0 < cut < len(reply)
    return stop, cut, index


def test_a_stop_string_ends_the_reply_before_it(engine):
    full, full_tokens = greedy_reply(engine)
    stop, cut, index = stops_from(full)
    with engine.session(template="raw") as s:
        pieces = []
        reply = s.send(PROMPT, **GREEDY, stop=stop, on_text=pieces.append)
        assert reply == full[:cut]
        assert "".join(pieces) == reply  # nothing held back was streamed, nothing lost
        assert s.turns[-1] == ("assistant", reply)
        stats = s.last_stats
        assert stats.stop_reason == "stop_string"
        assert stats.stop_index == index
        assert stats.generated_tokens < GREEDY["max_tokens"]
        # The tokens that brought only stop-string text are dropped; the rest are the same.
        tokens = s.tokens
        assert len(tokens) < len(full_tokens)
        assert tokens == full_tokens[:len(tokens)]
        s.send(" Then", **GREEDY)  # the conversation goes on after a stopped reply
        assert len(s.turns) == 4


def test_a_stream_stops_at_a_stop_string_too(engine):
    full, _ = greedy_reply(engine)
    stop, cut, index = stops_from(full)
    with engine.session(template="raw") as s:
        # The encoded stop strings exist only in the options stream() built: they must stay
        # alive until the reply runs, at the first next().
        it = s.stream(PROMPT, **GREEDY, stop=stop)
        gc.collect()
        assert "".join(it) == full[:cut]
        assert s.last_stats.stop_reason == "stop_string"
        assert s.last_stats.stop_index == index


def test_no_stop_string_in_the_reply_changes_nothing(engine):
    full, full_tokens = greedy_reply(engine)
    absent = "\u2603"
    assert absent not in full
    with engine.session(template="raw") as s:
        assert s.send(PROMPT, **GREEDY, stop=[absent]) == full
        assert s.tokens == full_tokens
        assert s.last_stats.stop_reason == "max_tokens"
        assert s.last_stats.stop_index is None


def test_max_tokens_and_cancel_are_reported(engine):
    with engine.session(template="raw") as s:
        s.send(PROMPT, temperature=0, max_tokens=4, ignore_eos=True)
        assert s.last_stats.generated_tokens == 4
        assert s.last_stats.stop_reason == "max_tokens"
        assert s.last_stats.stop_index is None
        s.send(" Then", **GREEDY, on_text=lambda piece: True)  # stops at the first piece
        assert s.last_stats.stop_reason == "cancelled"
        assert s.last_stats.stop_index is None


@pytest.mark.parametrize("stop", [[""], ["a"] * 17, ["ok", "x" * 257]],
                         ids=["empty", "seventeen", "too-long"])
def test_a_bad_stop_list_is_the_librarys_invalid_argument(engine, stop):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError) as info:
            s.send(PROMPT, **GREEDY, stop=stop)
        assert info.value.status == 1
        assert "PARLEY_E_INVALID_ARGUMENT" in str(info.value)
        assert "stop" in info.value.message  # the library's message names the option
        assert s.info.n_turns == 0  # refused before anything was added
        s.send(PROMPT, **GREEDY)
        assert s.info.n_turns == 2


@pytest.mark.parametrize("stop, match", [("word", "sequence of str"), (42, "sequence of str"),
                                         ([b"word"], "must be a str"), ([None], "must be a str"),
                                         (["a\0b"], "NUL"), (["a\ud800"], "Unicode")],
                         ids=["str", "int", "bytes", "None", "nul", "surrogate"])
def test_stop_values_python_cannot_pass_are_refused_before_c(engine, stop, match):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match=match) as info:
            s.send(PROMPT, **GREEDY, stop=stop)
        assert isinstance(info.value, ValueError)
        with pytest.raises(parley.InvalidArgumentError, match=match):
            s.stream(PROMPT, **GREEDY, stop=stop)


def test_an_empty_stop_list_means_none(engine):
    full, _ = greedy_reply(engine)
    with engine.session(template="raw") as s:
        assert s.send(PROMPT, **GREEDY, stop=()) == full
