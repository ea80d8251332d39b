"""reply_prefix (since 0.3): the reply starts with the caller's text, tokenized by the library
as plain text, and the model goes on from it; it is streamed, returned and kept as the
reply's start, and max_tokens and stop strings apply only to what follows it."""

import gc

import pytest

from conftest import GREEDY

import parley

PROMPT = "Once upon a time"
PREFIX = " There was a"


def prompt_tokens(engine, template):
    """The conversation's tokens up to where the reply starts: a 1-token reply, dropped."""
    with engine.session(template=template) as s:
        s.send(PROMPT, temperature=0, max_tokens=1, ignore_eos=True)
        assert s.last_stats.generated_tokens == 1
        return s.tokens[:-1]


@pytest.mark.parametrize("template", ["raw", "chatml"])
def test_the_reply_starts_with_the_prefix_in_text_and_tokens(engine, template):
    before = prompt_tokens(engine, template)
    prefix_ids = engine.tokenize(PREFIX)
    assert prefix_ids
    with engine.session(template=template) as s:
        pieces = []
        reply = s.send(PROMPT, **GREEDY, reply_prefix=PREFIX, on_text=pieces.append)
        assert reply.startswith(PREFIX)
        assert len(reply) > len(PREFIX)  # the model went on from it
        assert pieces[0].startswith(PREFIX)  # streamed first
        assert "".join(pieces) == reply
        assert s.turns[-1] == ("assistant", reply)
        tokens = s.tokens
        assert tokens[:len(before)] == before
        assert tokens[len(before):len(before) + len(prefix_ids)] == prefix_ids
        # max_tokens counts only what follows the prefix.
        assert len(tokens) == len(before) + len(prefix_ids) + GREEDY["max_tokens"]
        assert s.last_stats.stop_reason == "max_tokens"


def test_a_stream_starts_with_the_prefix_too(engine):
    with engine.session(template="raw") as s:
        expected = s.send(PROMPT, **GREEDY, reply_prefix=PREFIX)
    with engine.session(template="raw") as s:
        # The encoded prefix exists only in the options stream() built: it must stay alive
        # until the reply runs, at the first next().
        it = s.stream(PROMPT, **GREEDY, reply_prefix="".join([" There", " was a"]))
        gc.collect()
        pieces = list(it)
        assert pieces[0].startswith(PREFIX)
        assert "".join(pieces) == expected
        assert s.turns[-1] == ("assistant", expected)


def test_a_stop_string_inside_the_prefix_does_not_stop_the_reply(engine):
    with engine.session(template="raw") as s:
        full = s.send(PROMPT, **GREEDY, reply_prefix=PREFIX)
    stop = "was"
    assert stop in PREFIX
    rest = full[len(PREFIX):]
    # Stop strings look only past the prefix: the reply ends at the first "was" after it.
    cut = rest.find(stop)
    expected = full if cut < 0 else PREFIX + rest[:cut]
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, **GREEDY, reply_prefix=PREFIX, stop=[stop])
        assert reply == expected
        assert len(reply) > len(PREFIX)
        assert s.last_stats.stop_reason == ("max_tokens" if cut < 0 else "stop_string")


def test_an_empty_prefix_means_none(engine):
    with engine.session(template="raw") as s:
        plain, plain_tokens = s.send(PROMPT, **GREEDY), s.tokens
    with engine.session(template="raw") as s:
        assert s.send(PROMPT, **GREEDY, reply_prefix="") == plain
        assert s.tokens == plain_tokens


@pytest.mark.parametrize("prefix, match", [("a\ud800", "Unicode"), ("a\0b", "NUL"),
                                           (42, "must be a str")],
                         ids=["surrogate", "nul", "int"])
def test_a_prefix_python_cannot_pass_is_refused_before_c(engine, prefix, match):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match=match) as info:
            s.send(PROMPT, **GREEDY, reply_prefix=prefix)
        assert info.value.status == 1
        with pytest.raises(parley.InvalidArgumentError, match=match):
            s.stream(PROMPT, **GREEDY, reply_prefix=prefix)
        assert s.info.n_turns == 0
