"""Session.continue_reply (since 0.4): generation without a new user message. It gives the
reply a rewind dropped again (regenerate), or more of a reply left open, appended to it.
Session.stream_continue is its iterator form, as stream() is send()'s."""

import pytest

from conftest import GREEDY

import parley

PROMPT = "Once upon a time"
ENDING_PROMPT = "The little dog"  # the raw model ends its greedy reply to this by itself
PREFIX = " There was a"


def cut_greedy(max_tokens):
    return dict(temperature=0, max_tokens=max_tokens, ignore_eos=True)


@pytest.mark.parametrize("template", ["raw", "chatml"])
def test_regenerating_a_rewound_reply_gives_it_again(engine, template):
    with engine.session(template=template) as s:
        reply = s.send(PROMPT, **GREEDY)
        tokens, turns = s.tokens, s.turns
        s.rewind(1)
        assert s.turns == turns[:-1]
        assert s.continue_reply(**GREEDY) == reply
        assert s.tokens == tokens
        assert s.turns == turns
        stats = s.last_stats
        assert stats.prompt_tokens == 0
        assert stats.generated_tokens == GREEDY["max_tokens"]
        assert stats.stop_reason == "max_tokens"


def test_the_same_seed_regenerates_a_sampled_reply(engine):
    sampled = dict(temperature=0.8, seed=1234, max_tokens=24)
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, **sampled)
        tokens = s.tokens
        s.rewind(1)
        assert s.continue_reply(**sampled) == reply
        assert s.tokens == tokens


def test_continuing_a_cut_reply_gives_the_longer_reply(engine):
    with engine.session(template="raw") as whole:
        expected = whole.send(PROMPT, **cut_greedy(10))
        expected_tokens = whole.tokens
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, **cut_greedy(4))
        n_turns = s.info.n_turns
        more = s.continue_reply(**cut_greedy(6))
        assert more  # the reply grew
        assert s.info.n_turns == n_turns  # the same turn, not a new one
        assert s.turns[-1] == ("assistant", expected)
        assert first + more == expected
        assert s.tokens == expected_tokens
        stats = s.last_stats
        assert stats.prompt_tokens == 0
        assert stats.generated_tokens == 6
        assert stats.stop_reason == "max_tokens"


def test_a_written_reply_is_continued(engine):
    written = "there was a big red dog."
    with engine.session(template="raw") as s:
        s.add_exchange(PROMPT, written)
        more = s.continue_reply(**GREEDY)
        assert more
        assert s.turns == [("user", PROMPT), ("assistant", written + more)]


def test_stop_strings_apply_to_the_new_text(engine):
    with engine.session(template="raw") as whole:
        full = whole.send(PROMPT, **cut_greedy(40))
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, **cut_greedy(8))
        rest = full[len(first):]
        stop = rest[len(rest) // 2:len(rest) // 2 + 4]
        assert stop.strip() and stop in rest
        more = s.continue_reply(**cut_greedy(32), stop=[stop])
        assert more == rest[:rest.find(stop)]
        assert s.last_stats.stop_reason == "stop_string"
        assert s.last_stats.stop_index == 0
        assert s.turns[-1] == ("assistant", first + more)


def test_on_text_pieces_concatenate_to_the_returned_text(engine):
    with engine.session(template="raw") as s:
        s.send(PROMPT, **cut_greedy(4))
        pieces = []
        more = s.continue_reply(**GREEDY, on_text=pieces.append)
        assert len(pieces) > 1
        assert "".join(pieces) == more


def test_true_from_on_text_stops_the_continuation_and_keeps_it(engine):
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, **cut_greedy(4))
        pieces = []

        def on_text(piece):
            pieces.append(piece)
            return len(pieces) == 3

        more = s.continue_reply(**GREEDY, on_text=on_text)
        assert len(pieces) == 3
        assert more == "".join(pieces)
        assert s.last_stats.stop_reason == "cancelled"
        assert s.turns[-1] == ("assistant", first + more)


def test_a_streamed_continuation_gives_what_continue_reply_gives(engine):
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, **cut_greedy(4))
        with s.fork() as twin:
            expected = twin.continue_reply(**GREEDY)
            tokens = s.tokens
            it = s.stream_continue(**GREEDY)
            assert s.tokens == tokens  # nothing generated before the first next()
            pieces = list(it)
            assert len(pieces) > 1
            assert "".join(pieces) == expected
            assert s.turns[-1] == ("assistant", first + expected)
            assert s.tokens == twin.tokens
        stats = s.last_stats
        assert stats.prompt_tokens == 0
        assert stats.generated_tokens == GREEDY["max_tokens"]
        assert stats.stop_reason == "max_tokens"


def test_a_rewound_reply_is_streamed_again(engine):
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, **GREEDY)
        tokens = s.tokens
        s.rewind(1)
        assert "".join(s.stream_continue(**GREEDY)) == reply
        assert s.tokens == tokens


def test_leaving_a_streamed_continuation_early_keeps_what_it_yielded(engine):
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, **cut_greedy(4))
        n_turns = s.info.n_turns
        for piece in s.stream_continue(**cut_greedy(200)):
            break
        assert piece
        assert s.info.n_turns == n_turns
        assert s.turns[-1] == ("assistant", first + piece)
        assert s.last_stats.stop_reason == "cancelled"
        assert s.continue_reply(**GREEDY)  # the stream's thread is done: the session is free


def test_calling_the_session_from_a_streamed_continuation_is_busy(engine):
    with engine.session(template="raw") as s:
        s.send(PROMPT, **cut_greedy(4))
        with pytest.raises(parley.BusyError):
            for _ in s.stream_continue(**cut_greedy(200)):
                s.tokens
        assert s.continue_reply(**GREEDY)


def test_a_reply_prefix_starts_a_regenerated_reply(engine):
    with engine.session(template="raw") as s:
        expected = s.send(PROMPT, **GREEDY, reply_prefix=PREFIX)
    with engine.session(template="raw") as s:
        s.send(PROMPT, **GREEDY)
        s.rewind(1)
        pieces = []
        reply = s.continue_reply(**GREEDY, reply_prefix=PREFIX, on_text=pieces.append)
        assert reply == expected
        assert pieces[0].startswith(PREFIX)
        assert s.turns[-1] == ("assistant", expected)


def test_a_fresh_session_has_nothing_to_continue(engine):
    for options in ({"template": "raw"}, {"template": "chatml", "system": "You tell stories."}):
        with engine.session(**options) as s:
            turns = s.turns
            with pytest.raises(parley.InvalidArgumentError) as info:
                s.continue_reply(**GREEDY)
            assert info.value.status == 1
            assert info.value.message  # the library's own message
            assert s.turns == turns
            it = s.stream_continue(**GREEDY)  # as stream(), the library is asked at next()
            with pytest.raises(parley.InvalidArgumentError) as streamed:
                next(it)
            assert streamed.value.status == 1
            assert streamed.value.message == info.value.message
            assert s.turns == turns


def test_a_reply_the_model_ended_is_not_continued(engine):
    with engine.session(template="raw") as s:
        reply = s.send(ENDING_PROMPT, temperature=0, max_tokens=0)
        if s.last_stats.stop_reason != "end_token":
            pytest.skip("the model did not end its reply to %r (%s)"
                        % (ENDING_PROMPT, s.last_stats.stop_reason))
        tokens = s.tokens
        with pytest.raises(parley.InvalidArgumentError) as info:
            s.continue_reply(**GREEDY)
        assert info.value.status == 1
        assert s.tokens == tokens
        assert s.turns[-1] == ("assistant", reply)
        s.rewind(1)  # a rewound reply is regenerated instead
        assert s.continue_reply(temperature=0, max_tokens=0) == reply
        assert s.last_stats.stop_reason == "end_token"


@pytest.mark.parametrize("steer", [" and then the dragon", ","], ids=["word", "joined"])
def test_a_reply_prefix_steers_a_reply_under_way(engine, steer):
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, **cut_greedy(4))
        n_turns = s.info.n_turns
        pieces = []
        more = s.continue_reply(**GREEDY, reply_prefix=steer, on_text=pieces.append)
        assert more.startswith(steer)
        assert pieces[0].startswith(steer)  # streamed first, as a reply's start
        assert len(more) > len(steer)  # the model went on from it
        assert s.info.n_turns == n_turns  # the same turn, not a new one
        # Appended as it is: " and" starts a word, "," joins the last one.
        assert s.turns[-1] == ("assistant", first + more)
        assert s.last_stats.generated_tokens == GREEDY["max_tokens"]  # after the prefix
        assert s.continue_reply(**GREEDY, reply_prefix="")  # "" is no prefix


def test_bad_options_are_refused_before_c(engine):
    with engine.session(template="raw") as s:
        s.send(PROMPT, **cut_greedy(4))
        with pytest.raises(parley.InvalidArgumentError):
            s.continue_reply(max_tokens=-1)
        with pytest.raises(parley.InvalidArgumentError, match="wrap it in a list"):
            s.continue_reply(stop="dog")
        with pytest.raises(parley.InvalidArgumentError):  # at the call, as stream()
            s.stream_continue(max_tokens=-1)


def test_a_closed_session_is_misuse(engine):
    s = engine.session(template="raw")
    s.close()
    with pytest.raises(parley.MisuseError):
        s.continue_reply(**GREEDY)
    with pytest.raises(parley.MisuseError):
        s.stream_continue(**GREEDY)
