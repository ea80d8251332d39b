"""Session.set_system_prompt (since 0.6): the conversation goes on under a new system prompt,
every message kept, as if the prompt had been there from the start."""

import pytest

from conftest import GREEDY, HUGE

import parley

PIRATE = "You are a pirate."
EXCHANGES = [("Tell me a story.", "Once upon a time there was a dog."),
             ("And then?", "He ran to the park and played.")]


def test_a_prompt_is_added_before_the_kept_turns_and_a_send_follows(engine):
    with engine.session(template="chatml") as s:
        s.send("Tell me a story.", **GREEDY)
        turns_before, tokens_before = s.turns, s.tokens
        assert [role for role, _ in turns_before] == ["user", "assistant"]

        s.set_system_prompt(PIRATE)
        assert s.turns == [("system", PIRATE)] + turns_before
        assert s.tokens != tokens_before
        assert s.send("And then?", **GREEDY)
        assert [role for role, _ in s.turns] == ["system", "user", "assistant", "user",
                                                 "assistant"]


@pytest.mark.parametrize("template", ["llama2", "chatml"])
@pytest.mark.parametrize("old_system", [None, "You tell stories."])
def test_the_tokens_are_those_of_a_session_that_began_with_the_prompt(engine, template,
                                                                       old_system):
    with engine.session(system=old_system, template=template) as s, \
            engine.session(system=PIRATE, template=template) as fresh:
        for user, reply in EXCHANGES:
            s.add_exchange(user, reply)
            fresh.add_exchange(user, reply)
        s.set_system_prompt(PIRATE)
        assert s.tokens == fresh.tokens
        assert s.turns == fresh.turns
        # The next turn reads the same conversation, so greedy replies agree.
        assert s.send("What was its name?", **GREEDY) == \
            fresh.send("What was its name?", **GREEDY)


@pytest.mark.parametrize("none", [None, ""])
def test_none_or_empty_removes_the_system_turn(engine, none):
    with engine.session(system=PIRATE, template="chatml") as s, \
            engine.session(template="chatml") as fresh:
        for user, reply in EXCHANGES:
            s.add_exchange(user, reply)
            fresh.add_exchange(user, reply)
        s.set_system_prompt(none)
        assert s.turns == [turn for exchange in EXCHANGES
                           for turn in zip(("user", "assistant"), exchange)]
        assert s.tokens == fresh.tokens
        s.set_system_prompt(none)  # none again: nothing to remove
        assert s.tokens == fresh.tokens


def test_a_prompt_on_an_empty_conversation_opens_it(engine):
    with engine.session(template="chatml") as s, \
            engine.session(system=PIRATE, template="chatml") as fresh:
        s.set_system_prompt(PIRATE)
        assert s.turns == [("system", PIRATE)]
        assert s.send("Tell me a story.", **GREEDY) == fresh.send("Tell me a story.", **GREEDY)
        assert s.tokens == fresh.tokens


def test_the_same_prompt_again_changes_nothing(engine):
    with engine.session(system=PIRATE, template="chatml") as s:
        s.send("Tell me a story.", **GREEDY)
        tokens, turns = s.tokens, s.turns
        s.set_system_prompt(PIRATE)
        assert s.tokens == tokens
        assert s.turns == turns


def test_a_prompt_that_is_not_text_is_an_invalid_argument(engine):
    with engine.session(template="chatml") as s:
        s.add_exchange(*EXCHANGES[0])
        turns = s.turns
        with pytest.raises(parley.InvalidArgumentError, match="must be a str"):
            s.set_system_prompt(5)
        with pytest.raises(parley.InvalidArgumentError, match="Unicode"):
            s.set_system_prompt("a\ud800b")  # a lone surrogate cannot be UTF-8
        with pytest.raises(parley.InvalidArgumentError, match="NUL"):
            s.set_system_prompt("a\0b")
        assert s.turns == turns


def test_a_prompt_longer_than_the_context_is_context_full(engine):
    with engine.session(system=PIRATE, template="chatml") as s:
        s.send("Tell me a story.", **GREEDY)
        tokens, turns = s.tokens, s.turns
        with pytest.raises(parley.ContextFullError) as info:
            s.set_system_prompt(HUGE)
        assert info.value.status == 7
        assert info.value.message  # the library's own message
        assert s.turns == turns
        assert s.tokens == tokens
        assert s.send("And then?", **GREEDY)  # still usable


def test_a_reopened_session_has_the_new_prompt(model_path, tmp_path):
    store = tmp_path / "chats.sqlite"
    with parley.Engine(model_path, store=store, kv="f32") as e:
        with e.session(id="story", system="You tell stories.", template="chatml") as s:
            s.send("Tell me a story.", **GREEDY)
            s.set_system_prompt(PIRATE)
            turns, tokens = s.turns, s.tokens

    with parley.Engine(model_path, store=store, kv="f32") as e, e.open_session("story") as s:
        assert s.turns[0] == ("system", PIRATE)
        assert s.turns == turns
        assert s.tokens == tokens
        assert s.send("And then?", **GREEDY)


def test_a_removed_prompt_stays_removed_when_reopened(model_path, tmp_path):
    store = tmp_path / "chats.sqlite"
    with parley.Engine(model_path, store=store, kv="f32") as e:
        with e.session(id="story", system=PIRATE, template="chatml") as s:
            s.send("Tell me a story.", **GREEDY)
            s.set_system_prompt(None)
            turns = s.turns

    with parley.Engine(model_path, store=store, kv="f32") as e, e.open_session("story") as s:
        assert s.turns == turns
        assert s.turns[0][0] == "user"


def test_setting_the_prompt_from_a_stream_loop_is_busy(engine):
    with engine.session(template="chatml") as s:
        with pytest.raises(parley.BusyError) as info:
            for _ in s.stream("Once", **GREEDY):
                s.set_system_prompt(PIRATE)
        assert info.value.status == 8
        assert [role for role, _ in s.turns] == ["user", "assistant"]


def test_a_closed_session_is_misuse(engine):
    s = engine.session(template="chatml")
    s.close()
    with pytest.raises(parley.MisuseError):
        s.set_system_prompt(PIRATE)
