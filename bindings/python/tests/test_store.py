"""Conversations with a store outlive their engine."""

from conftest import GREEDY

import parley


def test_a_session_reopened_in_a_new_engine_continues(model_path, tmp_path):
    store = tmp_path / "chats.sqlite"
    with parley.Engine(model_path, store=store, kv="f32") as e:
        with e.session(id="story", template="raw") as s:
            first = s.send("Once upon a time", **GREEDY)
            tokens = s.tokens
        assert e.sessions() == ["story"]
        assert e.stats.store_bytes > 0

    with parley.Engine(model_path, store=store, kv="f32") as e:
        assert e.sessions() == ["story"]
        with e.open_session("story") as s:
            assert s.turns == [("user", "Once upon a time"), ("assistant", first)]
            assert s.tokens == tokens
            s.send(" The end.", **GREEDY)
            assert s.last_stats.kv_source == "restored"
            assert s.last_stats.reused_tokens > 0
            assert len(s.turns) == 4

    # The continuation matches one that never left memory.
    with parley.Engine(model_path, kv="f32") as e, e.session(template="raw") as s:
        s.send("Once upon a time", **GREEDY)
        s.send(" The end.", **GREEDY)
        expected = s.tokens
    with parley.Engine(model_path, store=store, kv="f32") as e, e.open_session("story") as s:
        assert s.tokens == expected


def test_suspend_spills_and_the_next_send_restores(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite") as e:
        with e.session(template="raw") as s:
            s.send("Once upon a time", **GREEDY)
            s.suspend()
            assert s.info.state == "spilled"
            assert s.info.kv_bytes_resident == 0
            assert s.info.kv_bytes_stored > 0
            s.send(" Then", **GREEDY)
            assert s.last_stats.kv_source == "restored"
            assert s.info.state == "active"


def test_delete_session(model_path, tmp_path):
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite") as e:
        for name in ("a", "b"):
            with e.session(id=name, template="raw") as s:
                s.send("Once", **GREEDY)
        assert e.sessions() == ["a", "b"]
        with e.open_session("a"):
            try:
                e.delete_session("a")
            except parley.InvalidArgumentError:
                pass  # an open session cannot be deleted
            else:
                raise AssertionError("deleting an open session succeeded")
        e.delete_session("a")
        assert e.sessions() == ["b"]
        try:
            e.delete_session("a")
        except parley.NotFoundError as err:
            assert err.status == 2
        else:
            raise AssertionError("deleting a deleted session succeeded")
