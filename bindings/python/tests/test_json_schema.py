"""json_schema (since 0.12): with format="json", the reply object satisfies a JSON Schema.
Sampled replies are checked with an independent validator (the jsonschema package), not with
the library's own reading of the schema; the binding's part (a dict or JSON text, format
"json" when left out, "text" refused) is checked beside the library's errors."""

import json

import pytest

from conftest import GREEDY

import parley

PROMPT = "Once upon a time"
SEEDS = range(1, 41)

# A game character: an enum, integers, a boolean, a nested object, a bounded array, and an
# Optional field (anyOf with null, as pydantic writes Optional[str] = None).
CHARACTER = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "class": {"enum": ["warrior", "mage", "rogue"]},
        "level": {"type": "integer"},
        "alive": {"type": "boolean"},
        "stats": {"type": "object",
                  "properties": {"hp": {"type": "integer"}, "mp": {"type": "integer"}},
                  "required": ["hp", "mp"], "additionalProperties": False},
        "items": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "guild": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
    "required": ["name", "class", "level", "alive", "stats", "items"],
    "additionalProperties": False,
}

# What pydantic's model_json_schema() writes for an Inventory with an Item list, a Color enum
# and an Optional note: $defs, $ref, titles.
INVENTORY = {
    "$defs": {
        "Color": {"enum": ["red", "green", "blue"], "title": "Color", "type": "string"},
        "Item": {"properties": {"name": {"title": "Name", "type": "string"},
                                "count": {"title": "Count", "type": "integer"}},
                 "required": ["name", "count"], "title": "Item", "type": "object"},
    },
    "properties": {
        "owner": {"title": "Owner", "type": "string"},
        "color": {"$ref": "#/$defs/Color"},
        "items": {"items": {"$ref": "#/$defs/Item"}, "maxItems": 2, "title": "Items",
                  "type": "array"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                 "title": "Note"},
    },
    "required": ["owner", "color", "items"],
    "title": "Inventory",
    "type": "object",
}

# A map: any keys, integer values.
COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}

ORDERED = {"type": "object",
           "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "boolean"},
                          "mid": {"enum": ["x", "y"]}},
           "required": ["zeta", "alpha", "mid"]}


@pytest.fixture(scope="module")
def jsonschema():
    return pytest.importorskip("jsonschema")


def added_text(engine, token):
    """The text `token` adds after "a" (detokenized alone, a leading space would be dropped)."""
    (a,) = engine.tokenize("a")
    return engine.detokenize([a, token])[len(engine.detokenize([a])):]


def nudged_to_close(engine):
    """A logit_bias under which the tiny reference model closes its objects within a few
    hundred tokens: left alone, it pads with whitespace (which JSON allows anywhere between
    tokens) and writes strings and numbers on until max_tokens. The tokens that show `"`, `,`
    or `}` alone are favoured, `}` most (the model has all but never seen it), and those that
    show whitespace alone are banned."""
    bias = {}
    for token in range(engine.model_info.n_vocab):
        text = added_text(engine, token)
        if text in ('"', ",", "}"):
            bias[token] = {'"': 9.0, ",": 8.0, "}": 26.0}[text]
        elif text and not text.strip():
            bias[token] = float("-inf")
    assert sorted(set(bias.values())) == [float("-inf"), 8.0, 9.0, 26.0]
    return bias


def sample(engine, schema, seed, **options):
    with engine.session(template="raw") as s:
        reply = s.send(PROMPT, json_schema=schema, seed=seed, temperature=1.0, max_tokens=200,
                       logit_bias=nudged_to_close(engine), **options)
        return reply, s.last_stats.stop_reason


def in_schema_order(value, schema):
    """Whether the object's keys are some of the schema's properties, in the schema's order."""
    order = list(schema.get("properties", {}))
    places = [order.index(k) if k in order else -1 for k in value]
    return -1 not in places and places == sorted(places)


@pytest.mark.parametrize("schema", [CHARACTER, INVENTORY, COUNTS],
                         ids=["character", "pydantic_refs", "map"])
def test_sampled_replies_that_close_satisfy_the_schema(engine, jsonschema, schema):
    whole = []
    for seed in SEEDS:
        reply, stop_reason = sample(engine, schema, seed)
        assert stop_reason in ("format_end", "max_tokens"), (seed, reply)
        if stop_reason == "max_tokens":
            assert reply.startswith("{"), (seed, reply)
            continue
        value = json.loads(reply)
        jsonschema.validate(value, schema)
        if schema is not COUNTS:
            assert in_schema_order(value, schema), (seed, reply)
        whole.append(reply)
    # The reference runs close every one of them.
    assert len(whole) >= 30
    assert len(set(whole)) >= 8  # seeds make different replies: many paths are checked


def test_optional_properties_are_sometimes_left_out_and_sometimes_written(engine):
    guilds = set()
    for seed in range(1, 21):
        reply, stop_reason = sample(engine, CHARACTER, seed)
        assert stop_reason == "format_end"
        value = json.loads(reply)
        assert set(CHARACTER["required"]) <= set(value)
        guilds.add("guild" in value)
    assert guilds == {True, False}


def test_properties_come_in_the_schema_order(engine):
    greedy = dict(temperature=0, max_tokens=200, logit_bias=nudged_to_close(engine))
    backwards = dict(ORDERED, properties=dict(reversed(list(ORDERED["properties"].items()))))
    for schema, keys in ((ORDERED, ["zeta", "alpha", "mid"]),
                         (backwards, ["mid", "alpha", "zeta"])):
        with engine.session(template="raw") as s:
            reply = s.send(PROMPT, json_schema=schema, **greedy)
            assert s.last_stats.stop_reason == "format_end"
            assert list(json.loads(reply)) == keys, reply


def test_a_dict_and_its_json_text_give_the_same_reply(engine):
    bias = nudged_to_close(engine)
    for seed in (1, 2, 3):
        replies = set()
        for schema in (INVENTORY, json.dumps(INVENTORY), json.dumps(INVENTORY, indent=2)):
            with engine.session(template="raw") as s:
                reply = s.send(PROMPT, json_schema=schema, seed=seed, temperature=1.0,
                               max_tokens=200, logit_bias=bias)
                replies.add((reply, s.last_stats.stop_reason, tuple(s.tokens)))
        assert len(replies) == 1, replies


def test_a_schema_makes_the_format_json_when_it_is_left_out(engine, jsonschema):
    greedy = dict(temperature=0, max_tokens=200, logit_bias=nudged_to_close(engine))
    with engine.session(template="raw") as s:
        given = s.send(PROMPT, format="json", json_schema=ORDERED, **greedy)
    with engine.session(template="raw") as s:
        assert s.send(PROMPT, json_schema=ORDERED, **greedy) == given
        assert s.last_stats.stop_reason == "format_end"
    jsonschema.validate(json.loads(given), ORDERED)
    reply, stop_reason = sample(engine, CHARACTER, 1)
    assert stop_reason == "format_end"
    jsonschema.validate(json.loads(reply), CHARACTER)


def test_a_stream_gives_the_reply_send_gives(engine):
    options = dict(temperature=1.0, seed=5, max_tokens=200, json_schema=CHARACTER,
                   logit_bias=nudged_to_close(engine))
    with engine.session(template="raw") as s:
        expected = s.send(PROMPT, **options)
    with engine.session(template="raw") as s:
        assert "".join(s.stream(PROMPT, **options)) == expected
        assert s.last_stats.stop_reason == "format_end"


def generating_calls(s):
    """The four calls that take json_schema, as functions of their keyword arguments."""
    return [lambda **kw: s.send(PROMPT, **kw),
            lambda **kw: s.stream(PROMPT, **kw),  # refused at the call, not the first next()
            lambda **kw: s.continue_reply(**kw),
            lambda **kw: s.stream_continue(**kw)]


def test_a_schema_with_format_text_is_refused_before_anything_is_sent(engine):
    with engine.session(template="raw") as s:
        for call in generating_calls(s):
            for schema in (ORDERED, json.dumps(ORDERED), ""):
                with pytest.raises(parley.InvalidArgumentError,
                                   match='json_schema is given with format="text": a schema '
                                         'needs format="json"') as info:
                    call(format="text", json_schema=schema)
                assert info.value.status == 1
        assert s.info.n_turns == 0
        assert s.last_stats is None


@pytest.mark.parametrize("schema", [{1, 2}, {"maximum": float("nan")}, {"type": object()},
                                    {("a", "b"): {}}, {"title": "\ud800"}, "\ud800"])
def test_a_value_json_cannot_write_is_refused_by_the_binding(engine, schema):
    with engine.session(template="raw") as s:
        for call in generating_calls(s):
            with pytest.raises(parley.InvalidArgumentError, match="json_schema") as info:
                call(json_schema=schema)
            assert info.value.status == 1
        assert s.info.n_turns == 0


def test_a_nul_in_the_schema_text_is_refused_by_the_binding(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match="json_schema contains a NUL"):
            s.send(PROMPT, json_schema='{"type": "object"}\0')


@pytest.mark.parametrize("schema, place, keyword", [
    ({"type": "object", "properties": {"n": {"type": "string", "maxLength": 3}}},
     '"/properties/n"', '"maxLength"'),
    ('{"type": "object", "properties": {"n": {"type": "string", "pattern": "^a"}}}',
     '"/properties/n"', '"pattern"'),
    ({"type": "object",
      "properties": {"tags": {"type": "array", "items": {"type": "integer", "minimum": 0}}}},
     '"/properties/tags/items"', '"minimum"'),
    ({"$defs": {"X": {"allOf": [{"type": "string"}]}},
      "type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}},
     '"/$defs/X"', '"allOf"'),
])
def test_an_unsupported_keyword_raises_unsupported_error_naming_its_place(engine, schema,
                                                                          place, keyword):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.UnsupportedError) as info:
            s.send(PROMPT, json_schema=schema, **GREEDY)
        assert info.value.status == 5
        assert info.value.reply is None
        assert "json_schema at %s: %s" % (place, keyword) in info.value.message
        assert "is not supported" in info.value.message
        assert s.info.n_turns == 0
        assert s.last_stats is None
        assert s.send(PROMPT, json_schema=ORDERED, **GREEDY)  # still usable


@pytest.mark.parametrize("schema, words", [
    ('{"type": "object",', "json_schema is not JSON"),
    ("not json", "json_schema is not JSON"),
    ({"type": "strin"}, '"strin" is not a type'),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/X"}}},
     'json_schema at "/properties/a": "$ref": "#/$defs/X" names no place'),
    ({"type": "string"}, "no object satisfies the schema"),
    ({"enum": []}, 'no value satisfies the schema ("enum" is empty)'),
    ({"type": "object", "properties": {"a": {"enum": []}}, "required": ["a"]},
     'no value satisfies the schema (at "/properties/a": "enum" is empty)'),
])
def test_a_schema_that_is_not_json_or_malformed_is_an_invalid_argument(engine, schema, words):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError) as info:
            s.send(PROMPT, json_schema=schema, **GREEDY)
        assert info.value.status == 1
        assert words in info.value.message
        assert s.info.n_turns == 0


def test_continuing_a_cut_reply_under_the_schema_completes_a_valid_object(engine, jsonschema):
    bias = nudged_to_close(engine)
    for seed in (1, 2, 3, 4):
        options = dict(json_schema=CHARACTER, seed=seed, temperature=1.0, logit_bias=bias)
        with engine.session(template="raw") as s:
            first = s.send(PROMPT, max_tokens=30, **options)
            assert s.last_stats.stop_reason == "max_tokens"
            with pytest.raises(json.JSONDecodeError):
                json.loads(first)
            n_turns = s.info.n_turns
            if seed % 2:
                more = s.continue_reply(max_tokens=200, **options)
            else:
                more = "".join(s.stream_continue(max_tokens=200, **options))
            assert s.last_stats.stop_reason == "format_end"
            assert s.info.n_turns == n_turns  # the same reply, grown
            jsonschema.validate(json.loads(first + more), CHARACTER)
            assert s.turns[-1] == ("assistant", first + more)
            assert s.continue_reply(max_tokens=10, **options) == ""  # it is whole
            assert s.last_stats.stop_reason == "format_end"


def test_a_reply_so_far_or_prefix_the_schema_refuses_is_an_invalid_argument(engine):
    other = {"type": "object", "properties": {"other": {"type": "string"}},
             "additionalProperties": False}
    with engine.session(template="raw") as s:
        first = s.send(PROMPT, json_schema=CHARACTER, temperature=0, max_tokens=10,
                       logit_bias=nudged_to_close(engine))
        assert s.last_stats.stop_reason == "max_tokens"
        assert first.startswith('{"name":')
        turns, tokens = s.turns, s.tokens
        with pytest.raises(parley.InvalidArgumentError, match="reply so far"):
            s.continue_reply(json_schema=other, max_tokens=5)
        with pytest.raises(parley.InvalidArgumentError, match="reply_prefix"):
            s.send("And then?", json_schema=CHARACTER, reply_prefix='{"other": ', **GREEDY)
        assert s.turns == turns
        assert s.tokens == tokens


def test_check_json_schema_says_without_an_engine_what_a_reply_would_raise():
    assert parley.check_json_schema({"properties": {"a": {"enum": [1, "b"]}}}) is None
    assert parley.check_json_schema('{"type": "object"}') is None
    with pytest.raises(parley.UnsupportedError, match='at "/properties/n": "pattern"'):
        parley.check_json_schema({"properties": {"n": {"type": "string", "pattern": "^a"}}})
    with pytest.raises(parley.InvalidArgumentError, match="is not JSON"):
        parley.check_json_schema('{"type": ')
    with pytest.raises(parley.InvalidArgumentError, match="no object satisfies"):
        parley.check_json_schema({"type": "array"})
    for empty in (None, ""):
        with pytest.raises(parley.InvalidArgumentError):
            parley.check_json_schema(empty)
