"""Engine.stored_session_info: a stored conversation's dates and size, without opening it."""

import time

import pytest

from conftest import GREEDY

import parley


def now_ms():
    return int(time.time() * 1000)


def test_an_open_session_after_a_send(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32") as e:
        before = now_ms()
        with e.session(id="story", template="raw") as s:
            s.send("Once upon a time", **GREEDY)
            info = e.stored_session_info("story")
        after = now_ms()
        assert isinstance(info, parley.StoredSessionInfo)
        assert info.n_turns == 2  # no system prompt: the user's message and the reply
        assert info.is_open is True
        assert info.same_model is True
        # A little slack: the store's clock is read apart from this one.
        assert before - 1000 <= info.created_unix_ms <= info.updated_unix_ms <= after + 1000


def test_the_system_prompt_is_counted(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32") as e:
        with e.session(id="story", system="You tell stories.") as s:
            s.send("Once upon a time", **GREEDY)
        assert e.stored_session_info("story").n_turns == 3


def test_a_closed_session_keeps_its_kv(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32") as e:
        with e.session(id="story", template="raw") as s:
            s.send("Once upon a time", **GREEDY)
        info = e.stored_session_info("story")
        assert info.is_open is False
        assert info.kv_bytes_stored > 0
        assert info.n_turns == 2
        assert info.same_model is True
        with pytest.raises(AttributeError):
            info.n_turns = 0  # a snapshot, not a view


def test_it_survives_a_new_engine(model_path, tmp_path):
    store = tmp_path / "chats.sqlite"
    with parley.Engine(model_path, store=store, kv="f32") as e:
        with e.session(id="story", template="raw") as s:
            s.send("Once upon a time", **GREEDY)
        first = e.stored_session_info("story")
    with parley.Engine(model_path, store=store, kv="f32") as e:
        assert e.stored_session_info("story") == first


def test_an_unknown_id_is_not_found(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32") as e:
        with pytest.raises(parley.NotFoundError) as err:
            e.stored_session_info("nobody")
        assert err.value.status == 2


def test_without_a_store_nothing_is_found(engine):
    with engine.session(id="story", template="raw") as s:
        s.send("Once", **GREEDY)
        with pytest.raises(parley.NotFoundError):
            engine.stored_session_info("story")


def test_an_empty_id_is_an_invalid_argument(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite", kv="f32") as e:
        with pytest.raises(parley.InvalidArgumentError):
            e.stored_session_info("")
        with pytest.raises(parley.InvalidArgumentError):
            e.stored_session_info("a\0b")  # C would read only "a"
