"""Session.overflow (since 0.8): the policy for a message that does not fit the context, told
by SessionInfo, changed by a setter and kept by the store; and SessionInfo.chat_template."""

import json

import pytest

from conftest import GREEDY, shared_file

import parley

# A small context fills after a few exchanges; the Q8_0 weights keep the test quick.
SMALL_MODEL = "models/stories260k/stories260k-q8_0.gguf"
CONTEXT = 128
SHORT = dict(temperature=0, max_tokens=8, ignore_eos=True)
MESSAGE = "Tell me about the dog."


@pytest.fixture
def small_model():
    return shared_file(SMALL_MODEL)


@pytest.fixture
def small_engine(small_model):
    with parley.Engine(small_model, context=CONTEXT, threads=2) as e:
        yield e


def fill(s):
    """Sends MESSAGE until one more would not fit; returns the number of turns then."""
    while s.count_tokens(MESSAGE).context_left > 0:
        s.send(MESSAGE, **SHORT)
    return s.info.n_turns


def test_the_policy_round_trips(small_engine):
    with small_engine.session(template="chatml") as s:
        assert s.overflow == "error"  # the default
        assert s.info.overflow == "error"
        s.overflow = "drop_oldest"
        assert s.overflow == "drop_oldest"
        assert s.info.overflow == "drop_oldest"
        s.overflow = "drop_oldest"  # the same again is fine
        s.overflow = "error"
        assert s.overflow == "error"
    with small_engine.session(template="chatml", overflow="drop_oldest") as s:
        assert s.overflow == "drop_oldest"


@pytest.mark.parametrize("bad", ["ignore", "DROP_OLDEST", 1, None])
def test_an_unknown_policy_is_refused_as_session_refuses_it(small_engine, bad):
    with pytest.raises(parley.InvalidArgumentError) as created:
        small_engine.session(overflow=bad)
    with small_engine.session(template="chatml", overflow="drop_oldest") as s:
        with pytest.raises(parley.InvalidArgumentError) as changed:
            s.overflow = bad
        assert str(changed.value) == str(created.value)
        assert changed.value.status == 1
        assert s.overflow == "drop_oldest"  # unchanged


def test_a_closed_session_is_misuse(small_engine):
    s = small_engine.session(template="chatml")
    s.close()
    with pytest.raises(parley.MisuseError):
        s.overflow
    with pytest.raises(parley.MisuseError):
        s.overflow = "drop_oldest"


def test_setting_it_from_a_stream_loop_is_busy(small_engine):
    with small_engine.session(template="chatml") as s:
        with pytest.raises(parley.BusyError):
            for _ in s.stream("Once", **SHORT):
                s.overflow = "drop_oldest"
        assert s.overflow == "error"


@pytest.mark.parametrize("template", ["raw", "llama2", "chatml"])
def test_info_tells_the_template(small_engine, template):
    with small_engine.session(template=template) as s:
        assert s.info.chat_template == template
        s.send("Once", **SHORT)
        assert s.info.chat_template == template


def test_without_a_template_info_tells_the_models(small_engine):
    with small_engine.session() as s:
        assert s.info.chat_template == small_engine.model_info.chat_template
        assert s.info.chat_template != ""


def test_the_policy_and_the_template_survive_reopening(small_model, tmp_path):
    store = tmp_path / "chats.sqlite"
    with parley.Engine(small_model, store=store, context=CONTEXT, threads=2) as e:
        with e.session(id="changed", template="chatml") as s:
            s.send("Once", **SHORT)
            s.overflow = "drop_oldest"
        with e.session(id="created", template="llama2", overflow="drop_oldest") as s:
            s.overflow = "error"
            s.overflow = "drop_oldest"
        with e.session(id="set-back", template="raw", overflow="drop_oldest") as s:
            s.overflow = "error"
    with parley.Engine(small_model, store=store, context=CONTEXT, threads=2) as e:
        for id, overflow, template in [("changed", "drop_oldest", "chatml"),
                                       ("created", "drop_oldest", "llama2"),
                                       ("set-back", "error", "raw")]:
            with e.open_session(id) as s:
                assert s.overflow == overflow, id
                assert s.info.chat_template == template, id
                assert json.loads(s.export())["overflow"] == overflow, id


def test_error_refuses_what_no_longer_fits_and_drop_oldest_takes_it(small_engine):
    # "raw": no template markers, so several exchanges fit the small context.
    with small_engine.session(template="raw") as s:
        full = fill(s)
        assert full >= 4  # two exchanges fit: one can be dropped for the next
        before = s.tokens, s.turns
        with pytest.raises(parley.ContextFullError) as info:
            s.send(MESSAGE, **SHORT)
        assert info.value.status == 7
        assert (s.tokens, s.turns) == before  # a refused message changes nothing

        s.overflow = "drop_oldest"
        assert (s.tokens, s.turns) == before  # the change itself drops nothing
        s.send(MESSAGE, **SHORT)
        assert s.turns[-2] == ("user", MESSAGE)
        assert s.info.n_turns <= full  # at least the oldest exchange went
        assert s.info.n_tokens <= CONTEXT
        for _ in range(4):  # and so it goes on, never past the context
            s.send(MESSAGE, **SHORT)
            assert s.info.n_turns <= full
            assert s.info.n_tokens <= CONTEXT

        s.overflow = "error"  # and back: the next message that does not fit is refused
        fill(s)
        with pytest.raises(parley.ContextFullError):
            s.send(MESSAGE, **SHORT)


def test_a_conversation_longer_than_the_context_does_not_open(small_model, tmp_path):
    store = tmp_path / "chats.sqlite"
    with parley.Engine(small_model, store=store, context=2 * CONTEXT, threads=2) as e:
        with e.session(id="long", template="raw") as s:
            while s.info.n_tokens <= CONTEXT:
                s.send(" and then", **GREEDY)
            tokens = s.tokens
    with parley.Engine(small_model, store=store, context=CONTEXT, threads=2) as e:
        with pytest.raises(parley.ContextFullError) as info:  # CorruptError before 0.8
            e.open_session("long")
        assert info.value.status == 7
        assert e.sessions() == ["long"]  # nothing changed
    with parley.Engine(small_model, store=store, context=2 * CONTEXT, threads=2) as e:
        with e.open_session("long") as s:  # an engine whose context holds it opens it
            assert s.tokens == tokens
