"""logit_bias (since 0.4): biases added to chosen tokens' logits before sampling; -inf bans a
token. Ids in range, each listed once, and biases finite or -inf are the library's to check."""

import gc

import pytest

from conftest import GREEDY

import parley

PROMPT = "Once upon a time"
BAN = float("-inf")


def greedy(max_tokens):
    return dict(temperature=0, max_tokens=max_tokens, ignore_eos=True)


def first_reply_token(engine, **options):
    """The prompt's tokens and the first token of the greedy reply to it."""
    with engine.session(template="raw") as s:
        s.send(PROMPT, **greedy(1), **options)
        tokens = s.tokens
        return tokens[:-1], tokens[-1]


def favoured_token(engine, avoid):
    """A one-token word the greedy reply does not start with."""
    (token,) = engine.tokenize(" the")
    assert token != avoid
    return token


def test_a_banned_token_is_never_chosen(engine):
    prompt, first = first_reply_token(engine)
    banned_prompt, other = first_reply_token(engine, logit_bias={first: BAN})
    assert banned_prompt == prompt  # only the reply changed
    assert other != first
    # An int past a double's range is infinite, as a float past a C float's is: -inf bans.
    assert first_reply_token(engine, logit_bias={first: -10 ** 400}) == (prompt, other)


def test_a_large_bias_makes_the_reply_that_token(engine):
    prompt, first = first_reply_token(engine)
    x = favoured_token(engine, first)
    with engine.session(template="raw") as s:
        s.send(PROMPT, **greedy(5), logit_bias={x: 100.0})
        tokens = s.tokens
        assert tokens[:len(prompt)] == prompt
        assert tokens[len(prompt):] == [x] * 5
        assert s.last_stats.generated_tokens == 5


def test_pairs_work_as_a_mapping_does_and_empty_is_none(engine):
    _, first = first_reply_token(engine)
    x = favoured_token(engine, first)
    with engine.session(template="raw") as s:
        by_mapping = s.send(PROMPT, **GREEDY, logit_bias={x: 3.5, first: -2})
    with engine.session(template="raw") as s:
        assert s.send(PROMPT, **GREEDY, logit_bias=[(x, 3.5), (first, -2)]) == by_mapping
    with engine.session(template="raw") as s:
        plain, plain_tokens = s.send(PROMPT, **GREEDY), s.tokens
    for none in ({}, []):
        with engine.session(template="raw") as s:
            assert s.send(PROMPT, **GREEDY, logit_bias=none) == plain
            assert s.tokens == plain_tokens


def test_a_stream_keeps_the_biases_alive(engine):
    prompt, first = first_reply_token(engine)
    x = favoured_token(engine, first)
    with engine.session(template="raw") as s:
        # The array exists only in the options stream() built: it must stay alive until the
        # reply runs, at the first next().
        it = s.stream(PROMPT, **greedy(5), logit_bias={x: 100.0})
        gc.collect()
        assert "".join(it) == s.turns[-1][1]
        assert s.tokens[len(prompt):] == [x] * 5


def refused_biases(n_vocab):
    return {
        "id -1": {-1: 1.0},
        "id n_vocab": {n_vocab: 1.0},
        "nan": {5: float("nan")},
        "+inf": {5: float("inf")},
        "past float": {5: 1e39},  # +inf as a C float
        "past double": {5: 10 ** 400},  # an int float() refuses: +inf too
        "twice": [(5, 1.0), (5, 2.0)],
        "every token banned": {i: BAN for i in range(n_vocab)},
    }


def test_what_the_library_refuses_leaves_the_session_as_it_was(engine):
    cases = refused_biases(engine.model_info.n_vocab)
    with engine.session(template="raw") as s:
        s.send(PROMPT, **greedy(4))
        turns, tokens = s.turns, s.tokens
        for name, bias in cases.items():
            with pytest.raises(parley.InvalidArgumentError, match="logit_bias") as info:
                s.send(" Then", **greedy(4), logit_bias=bias)
            assert info.value.status == 1, name
            with pytest.raises(parley.InvalidArgumentError, match="logit_bias"):
                list(s.stream(" Then", **greedy(4), logit_bias=bias))
            with pytest.raises(parley.InvalidArgumentError, match="logit_bias"):
                s.continue_reply(**greedy(4), logit_bias=bias)
            assert s.info.n_turns == len(turns), name
            assert s.turns == turns, name
            assert s.tokens == tokens, name
        s.send(" Then", **greedy(4))  # the session goes on
        assert s.info.n_turns == len(turns) + 2


@pytest.mark.parametrize("bias, match", [
    ({"7": 1.0}, "token '7' must be an int"),
    ({7.0: 1.0}, "token 7.0 must be an int"),
    ({True: 1.0}, "token True must be an int"),
    ({2 ** 31: 1.0}, "outside"),
    ({7: "big"}, "token 7 must be a float"),
    ({7: None}, "token 7 must be a float"),
    ("7", "mapping"),
    (7, "mapping"),
    ([(7,)], r"logit_bias\[0\] must be a \(token id, bias\) pair"),
], ids=["str id", "float id", "bool id", "id past int32", "str bias", "none bias", "str",
        "int", "not a pair"])
def test_what_python_cannot_pass_is_refused_before_c(engine, bias, match):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match=match) as info:
            s.send(PROMPT, **GREEDY, logit_bias=bias)
        assert info.value.status == 1
        with pytest.raises(parley.InvalidArgumentError, match=match):
            s.stream(PROMPT, **GREEDY, logit_bias=bias)
        with pytest.raises(parley.InvalidArgumentError, match=match):
            s.continue_reply(**GREEDY, logit_bias=bias)
        assert s.info.n_turns == 0


def test_continue_reply_takes_biases_too(engine):
    prompt, first = first_reply_token(engine)
    x = favoured_token(engine, first)
    with engine.session(template="raw") as s:
        s.send(PROMPT, **greedy(4))
        before, n_turns = s.tokens, s.info.n_turns
        s.continue_reply(**greedy(3), logit_bias={x: 100.0})
        assert s.info.n_turns == n_turns  # appended to the open reply
        assert s.tokens == before + [x] * 3
    # Regenerating a rewound reply with its first token banned gives another start.
    _, other = first_reply_token(engine, logit_bias={first: BAN})
    with engine.session(template="raw") as s:
        s.send(PROMPT, **greedy(1))
        s.rewind(1)
        s.continue_reply(**greedy(1), logit_bias={first: BAN})
        assert s.tokens == prompt + [other]
