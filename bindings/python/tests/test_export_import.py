"""Session.export and Engine.import_session (since 0.7): a conversation as portable JSON, and a
session made of it again."""

import json

import pytest

from conftest import GREEDY

import parley

SYSTEM = "You tell stories."
KEYS = {"format", "version", "id", "chat_template", "system_prompt", "cache_scope", "overflow",
        "model_fingerprint", "created_unix_ms", "messages"}


def two_turns(engine, id=None):
    """A session with a system prompt and two greedy exchanges."""
    s = engine.session(id=id, system=SYSTEM)
    s.send("Once upon a time", **GREEDY)
    s.send(" The dog", **GREEDY)
    return s


def test_a_round_trip_keeps_tokens_and_turns_and_replies_alike(engine):
    with two_turns(engine) as s:
        with engine.import_session(s.export(), id="copy") as copy:
            assert copy.id == "copy"
            assert copy.tokens == s.tokens
            assert copy.turns == s.turns
            assert copy.turns[0] == ("system", SYSTEM)
            reply = s.send(" Then", **GREEDY)
            assert copy.send(" Then", **GREEDY) == reply
            assert copy.last_stats.kv_source == "new"  # ids kept; no store to bring KV from
            assert copy.tokens == s.tokens


def test_the_json_has_the_documented_fields(engine):
    with two_turns(engine, id="story") as s:
        data = json.loads(s.export())
        assert set(data) == KEYS
        assert data["format"] == "parley-conversation"
        assert data["version"] == 1
        assert data["id"] == "story"
        assert data["system_prompt"] == SYSTEM
        assert data["overflow"] in ("error", "drop_oldest")
        assert len(data["model_fingerprint"]) == 16
        int(data["model_fingerprint"], 16)
        assert isinstance(data["created_unix_ms"], int)
        messages = data["messages"]
        assert [(m["role"], m["text"]) for m in messages] == s.turns
        assert [t for m in messages for t in m.get("tokens", [])] == s.tokens
        assert all(isinstance(m["closed"], bool) for m in messages if m["role"] == "assistant")


def test_texts_only_json_is_added_as_add_exchange_adds(engine):
    with two_turns(engine) as s:
        data = json.loads(s.export())
        turns = s.turns
    for m in data["messages"]:
        m.pop("tokens", None)
    with engine.import_session(json.dumps(data), id="texts") as imported:
        assert imported.turns == turns
        with engine.session(system=SYSTEM, template=data["chat_template"]) as built:
            built.add_exchange(turns[1][1], turns[2][1])
            built.add_exchange(turns[3][1], turns[4][1])
            assert imported.tokens == built.tokens


def test_without_an_id_the_conversation_keeps_its_own(engine):
    with two_turns(engine, id="saved") as s:
        text, tokens = s.export(), s.tokens
    with engine.import_session(text) as again:
        assert again.id == "saved"
        assert again.tokens == tokens


def test_malformed_json_is_an_invalid_argument_naming_the_field(engine):
    with two_turns(engine) as s:
        text = s.export()
    data = json.loads(text)
    data["messages"][1]["role"] = "narrator"
    with pytest.raises(parley.InvalidArgumentError) as info:
        engine.import_session(json.dumps(data), id="bad")
    assert "messages[1].role" in info.value.message
    with pytest.raises(parley.InvalidArgumentError, match="not valid JSON"):
        engine.import_session("{", id="bad")
    with pytest.raises(parley.InvalidArgumentError):
        engine.import_session(text, id="")  # "" is not "keep the id": None is


def test_an_id_already_open_is_refused(engine):
    with two_turns(engine, id="open") as s:
        text = s.export()
        with pytest.raises(parley.InvalidArgumentError, match="open"):
            engine.import_session(text)
        with engine.session(id="taken", system=SYSTEM):
            with pytest.raises(parley.InvalidArgumentError, match="taken"):
                engine.import_session(text, id="taken")


def test_with_a_store_the_import_is_stored_and_its_kv_rebuilt(model_path, tmp_path, engine):
    with two_turns(engine) as s:
        text, tokens = s.export(), s.tokens
        reply = s.send(" Then", **GREEDY)
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32", threads=2) as e:
        with e.import_session(text, id="moved") as moved:
            assert moved.tokens == tokens
            assert moved.send(" Then", **GREEDY) == reply
            assert moved.last_stats.kv_source == "rebuilt"
        assert e.sessions() == ["moved"]
