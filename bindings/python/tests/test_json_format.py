"""format="json" (since 0.11): the reply is one JSON object. Each token is drawn only among
those that keep the reply the start of one, and the reply ends where the object closes, with
stop_reason "format_end". reply_prefix (for a continuation, the reply so far too) must be the
start of an object."""

import json

import pytest

from conftest import GREEDY

import parley

PROMPT = "Once upon a time"
BAN = float("-inf")
# Greedy, with room for the reference model to close an object its own way.
JSON_GREEDY = dict(temperature=0, max_tokens=256, format="json")


def closing_ids(engine):
    """The tokens whose text is "}"."""
    ids = [i for i in range(engine.model_info.n_vocab) if engine.detokenize([i]) == "}"]
    assert ids
    return ids


def nudged_to_close(engine, bias=12.0):
    """A logit_bias that makes "}" likelier: the tiny reference model, left alone, writes on
    until max_tokens; with this it closes an object of its own."""
    return {i: bias for i in closing_ids(engine)}


@pytest.mark.parametrize("template", ["raw", "chatml"])
def test_a_reply_whose_object_closed_is_one_json_object(engine, template):
    with engine.session(template=template) as s:
        reply = s.send(PROMPT, **JSON_GREEDY, logit_bias=nudged_to_close(engine))
        stats = s.last_stats
        assert stats.stop_reason == "format_end"
        assert stats.stop_index is None
        assert stats.generated_tokens < JSON_GREEDY["max_tokens"]
        value = json.loads(reply)
        assert isinstance(value, dict)
        assert reply.endswith("}")  # nothing after the object
        assert s.turns[-1] == ("assistant", reply)


def test_sampled_replies_parse_when_their_object_closed(engine):
    closed = 0
    for seed in range(1, 9):
        with engine.session(template="raw") as s:
            reply = s.send(PROMPT, format="json", seed=seed, temperature=1.0, max_tokens=200,
                           logit_bias=nudged_to_close(engine, 15.0))
            stop_reason = s.last_stats.stop_reason
            assert stop_reason in ("format_end", "max_tokens")
            if stop_reason == "format_end":
                assert isinstance(json.loads(reply), dict)
                closed += 1
            else:
                assert reply.lstrip().startswith("{")
    assert closed >= 4  # the branch that parses is taken


def test_a_stream_gives_the_reply_send_gives(engine):
    bias = nudged_to_close(engine)
    with engine.session(template="raw") as s:
        expected = s.send(PROMPT, **JSON_GREEDY, logit_bias=bias)
    with engine.session(template="raw") as s:
        assert "".join(s.stream(PROMPT, **JSON_GREEDY, logit_bias=bias)) == expected
        assert s.last_stats.stop_reason == "format_end"


def test_a_favoured_closing_brace_closes_the_prefix_at_once(engine):
    bias = {i: 100.0 for i in closing_ids(engine)}
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, temperature=0, format="json", reply_prefix='{"a": 1',
                       logit_bias=bias)
        assert reply == '{"a": 1}'
        assert json.loads(reply) == {"a": 1}
        assert s.last_stats.stop_reason == "format_end"
        assert s.last_stats.generated_tokens == 1


def test_a_whole_object_as_prefix_generates_nothing(engine):
    with engine.session(template="raw") as s:
        assert s.send(PROMPT, **JSON_GREEDY, reply_prefix="{}") == "{}"
        assert s.last_stats.stop_reason == "format_end"
        assert s.last_stats.generated_tokens == 0
        assert s.turns[-1] == ("assistant", "{}")


def test_text_and_none_are_the_default_format(engine):
    with engine.session(template="raw") as s:
        plain, plain_tokens = s.send(PROMPT, **GREEDY), s.tokens
    for text in ("text", None):
        with engine.session(template="raw") as s:
            assert s.send(PROMPT, **GREEDY, format=text) == plain
            assert s.tokens == plain_tokens


@pytest.mark.parametrize("prefix", ["[", "x", '{"a" 1', "{}}"])
def test_a_prefix_that_is_not_the_start_of_an_object_is_refused(engine, prefix):
    with engine.session(template="raw") as s:
        s.send(PROMPT, **GREEDY)
        turns, tokens = s.turns, s.tokens
        with pytest.raises(parley.InvalidArgumentError, match="reply_prefix") as info:
            s.send("And then?", **JSON_GREEDY, reply_prefix=prefix)
        assert info.value.status == 1
        assert info.value.reply is None
        with pytest.raises(parley.InvalidArgumentError, match="reply_prefix"):
            list(s.stream("And then?", **JSON_GREEDY, reply_prefix=prefix))
        assert s.turns == turns  # no new turn
        assert s.tokens == tokens
        assert s.send("And then?", **JSON_GREEDY, reply_prefix="{")  # still usable


@pytest.mark.parametrize("value", ["xml", "JSON", "", 1, True, ["json"]])
def test_another_format_is_refused_before_anything_is_sent(engine, value):
    with engine.session(template="raw") as s:
        calls = [lambda: s.send(PROMPT, format=value),
                 lambda: s.stream(PROMPT, format=value),  # at the call, not the first next()
                 lambda: s.continue_reply(format=value),
                 lambda: s.stream_continue(format=value)]
        for call in calls:
            with pytest.raises(parley.InvalidArgumentError,
                               match='format must be "text", "json" or None') as info:
                call()
            assert info.value.status == 1
        assert s.info.n_turns == 0
        assert s.last_stats is None


def test_a_logit_bias_banning_every_token_the_format_allows_is_refused(engine):
    (a,) = engine.tokenize("a")
    # "a" alone is left: text may start with it, an object may not.
    bias = {i: BAN for i in range(engine.model_info.n_vocab) if i != a}
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match="format allows"):
            s.send(PROMPT, **JSON_GREEDY, logit_bias=bias)
        assert s.info.n_turns == 0
        assert s.send(PROMPT, temperature=0, max_tokens=3, logit_bias=bias).strip()


def test_continuing_a_cut_json_reply_goes_on(engine):
    cut = dict(JSON_GREEDY, max_tokens=10)
    with engine.session(template="raw") as whole:
        expected = whole.send(PROMPT, **dict(cut, max_tokens=20))
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, **cut)
        assert s.last_stats.stop_reason == "max_tokens"
        n_turns = s.info.n_turns
        more = s.continue_reply(**cut)
        assert more
        assert s.last_stats.stop_reason == "max_tokens"
        assert s.info.n_turns == n_turns  # the same reply, grown
        assert first + more == expected
        rest = "".join(s.stream_continue(**dict(JSON_GREEDY, max_tokens=512),
                                         logit_bias=nudged_to_close(engine)))
        assert s.last_stats.stop_reason == "format_end"
        assert isinstance(json.loads(first + more + rest), dict)
        assert s.turns[-1] == ("assistant", first + more + rest)


def test_continuing_a_text_reply_as_json_is_refused(engine):
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, temperature=0, max_tokens=5, ignore_eos=True)
        assert not reply.lstrip().startswith("{")
        tokens = s.tokens
        with pytest.raises(parley.InvalidArgumentError, match="reply so far"):
            s.continue_reply(**JSON_GREEDY)
        assert s.turns[-1] == ("assistant", reply)
        assert s.tokens == tokens
        assert s.continue_reply(temperature=0, max_tokens=5, ignore_eos=True)  # as text
