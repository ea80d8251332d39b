"""Each failure raises the ParleyError subclass of its status, with the library's message."""

import contextlib
import copy
import pickle
import threading

import pytest

from conftest import GREEDY

import parley

LONG = dict(temperature=0, max_tokens=200, ignore_eos=True)


def test_a_missing_model_is_not_found(tmp_path):
    with pytest.raises(parley.NotFoundError) as info:
        parley.Engine(tmp_path / "no-such-model.gguf")
    assert info.value.status == 2
    assert info.value.message  # parley_last_error()'s text, read right after the call
    assert "PARLEY_E_NOT_FOUND" in str(info.value)


def test_an_unknown_template_is_an_invalid_argument(engine):
    with pytest.raises(parley.InvalidArgumentError) as info:
        engine.session(template="no-such-template")
    assert info.value.status == 1
    assert "no-such-template" in info.value.message
    assert isinstance(info.value, ValueError)


def test_bad_python_arguments_are_refused_before_c(engine, model_path):
    with pytest.raises(parley.InvalidArgumentError):
        parley.Engine(model_path, kv="int4")
    with pytest.raises(parley.InvalidArgumentError):
        engine.session(overflow="ignore")
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError):
            s.send("hi", max_tokens=-1)
        with pytest.raises(parley.InvalidArgumentError, match="NUL"):
            s.send("a\0b")
        with pytest.raises(parley.InvalidArgumentError, match="Unicode"):
            s.send("a\ud800b")  # a lone surrogate cannot be UTF-8


@pytest.mark.parametrize("call, name", [
    (lambda model: parley.Engine(42), "model"),
    (lambda model: parley.Engine(model, store=3), "store"),
    (lambda model: parley.Engine(model, device=1), "device"),
], ids=["model", "store", "device"])
def test_wrong_typed_engine_arguments_are_invalid_arguments(model_path, call, name):
    with pytest.raises(parley.InvalidArgumentError, match="^PARLEY_E_INVALID_ARGUMENT: %s "
                       % name):
        call(model_path)


@pytest.mark.parametrize("name", ["temperature", "top_p", "min_p", "repeat_penalty"])
@pytest.mark.parametrize("value", [None, "hot", "0.5", True], ids=repr)
def test_a_sampling_number_of_another_type_is_refused_before_c(engine, name, value):
    with engine.session(template="raw") as s:
        for call in (lambda: s.send("Once", **{name: value}),
                     lambda: s.stream("Once", **{name: value}),
                     lambda: s.continue_reply(**{name: value})):
            with pytest.raises(parley.InvalidArgumentError, match=name):
                call()
        assert s.turns == []
        assert s.send("Once", **dict(GREEDY, **{name: 0.5}))  # a real number is fine


@pytest.mark.parametrize("name", ["temperature", "top_p", "min_p", "repeat_penalty"])
@pytest.mark.parametrize("value", [1e300, 10 ** 400, -10 ** 400],
                         ids=["past float", "int past double", "int past -double"])
def test_a_sampling_number_past_the_c_float_is_the_librarys_invalid_argument(engine, name,
                                                                            value):
    with engine.session(template="raw") as s:
        for call in (lambda: s.send("Once", **{name: value}),
                     lambda: list(s.stream("Once", **{name: value})),
                     lambda: s.continue_reply(**{name: value})):
            with pytest.raises(parley.InvalidArgumentError) as info:
                call()
            assert info.value.status == 1
        assert s.turns == []


@pytest.mark.parametrize("name", ["temperature", "top_p", "min_p", "repeat_penalty"])
@pytest.mark.parametrize("value", [1e-46, -1e-46], ids=["tiny", "tiny negative"])
def test_a_sampling_number_the_c_float_reads_as_0_is_refused(engine, name, value):
    # top_p = 0 means "off": a tiny top_p must not turn into no nucleus at all.
    with engine.session(template="raw") as s:
        for call in (lambda: s.send("Once", **{name: value}),
                     lambda: list(s.stream("Once", **{name: value})),
                     lambda: s.continue_reply(**{name: value})):
            with pytest.raises(parley.InvalidArgumentError, match="%s = .* would be 0" % name):
                call()
        assert s.turns == []
        s.send("Once", **dict(GREEDY, **{name: 1e-44}))  # a C float holds this one
        assert len(s.turns) == 2  # the message and its reply


@pytest.mark.parametrize("cls", [parley.ParleyError] + parley.ParleyError.__subclasses__(),
                         ids=lambda cls: cls.__name__)
def test_every_error_has_a_reply_none_unless_a_turn_was_kept(cls):
    # `except parley.ParleyError as e: e.reply` works for every error.
    assert cls("a message", 1 if cls is parley.ParleyError else None).reply is None


def test_a_parley_error_made_with_a_message_alone_says_that_message():
    # A program's own failure around Parley, caught with the library's under ParleyError.
    error = parley.ParleyError("my wrapper failed")
    assert str(error) == "my wrapper failed"
    assert error.message == "my wrapper failed"
    assert error.status is None and error.reply is None
    copied = pickle.loads(pickle.dumps(error))
    assert str(copied) == str(error) and copied.status is None


@pytest.mark.parametrize("call, name", [
    (lambda e, s: s.send(None), "text"),
    (lambda e, s: s.stream(None), "text"),  # at the call, not at the first next()
    (lambda e, s: s.count_tokens(None), "text"),
    (lambda e, s: s.add_exchange(None, " reply"), "user_text"),
    (lambda e, s: s.add_exchange("message", None), "reply_text"),
    (lambda e, s: s.score_replies("message", [" yes", None]), r"replies\[1\]"),
    (lambda e, s: e.tokenize(None), "text"),
    (lambda e, s: e.import_session(None), "json"),
    (lambda e, s: e.open_session(None), "id"),
    (lambda e, s: e.delete_session(None), "id"),
    (lambda e, s: e.stored_session_info(None), "id"),
    (lambda e, s: parley.Engine(None), "model"),
], ids=["send", "stream", "count_tokens", "user_text", "reply_text", "score_replies",
        "tokenize", "import_session", "open_session", "delete_session", "stored_session_info",
        "Engine"])
def test_none_for_a_required_text_is_refused_at_the_call_under_its_python_name(engine, call,
                                                                               name):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError,
                           match="^PARLEY_E_INVALID_ARGUMENT: %s must be a str" % name):
            call(engine, s)
        assert s.info.n_turns == 0


def test_errors_of_a_refused_send_have_no_reply(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError) as invalid:
            s.send("Once", max_tokens=-1)
        with pytest.raises(parley.ContextFullError) as full:
            s.send("Once upon a time " * 200, **GREEDY)
        assert invalid.value.reply is None and full.value.reply is None
        assert s.turns == []


@pytest.mark.parametrize("ids", [None, 5, "abc", [1, None], [1.5]], ids=repr)
def test_detokenize_refuses_what_is_not_token_ids(engine, ids):
    with pytest.raises(parley.InvalidArgumentError, match="ids"):
        engine.detokenize(ids)


def test_an_on_text_that_is_not_callable_is_refused_before_the_message_is_added(engine):
    with engine.session(template="raw") as s:
        for call in (lambda: s.send("Once", **GREEDY, on_text=5),
                     lambda: s.continue_reply(**GREEDY, on_text="print")):
            with pytest.raises(parley.InvalidArgumentError, match="on_text"):
                call()
        assert s.turns == []
        assert s.tokens == []
        assert s.last_stats is None


def test_a_stream_of_a_wrong_typed_message_fails_at_the_call(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match="text"):
            s.stream(5)
        assert s.turns == []


@pytest.mark.parametrize("stop", [{"."}, frozenset({".", "!"}), {".": 1}], ids=repr)
def test_unordered_stop_strings_are_refused(engine, stop):
    # stop_index tells a place in stop's order, which a set or a dict does not keep.
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError, match="stop must be a list or tuple"):
            s.send("Once", **GREEDY, stop=stop)
        with pytest.raises(parley.InvalidArgumentError, match="stop"):
            s.stream("Once", **GREEDY, stop=stop)
        assert s.turns == []
        assert s.send("Once", **GREEDY, stop=(".", "!")) is not None  # a tuple is fine


def test_a_closed_session_is_misuse(engine):
    s = engine.session(template="raw")
    s.close()
    s.close()  # twice is a no-op
    for call in (lambda: s.send("hi"), lambda: s.tokens, lambda: s.info,
                 lambda: s.stream("hi"), s.prepare, lambda: s.score_replies("hi", ["a"])):
        with pytest.raises(parley.MisuseError) as info:
            call()
        assert info.value.status == 15
    s.interrupt()  # but this: nothing runs on a closed session, so there is nothing to stop


def test_a_closed_engine_is_misuse(model_path):
    e = parley.Engine(model_path)
    e.close()
    with pytest.raises(parley.MisuseError):
        e.session()
    with pytest.raises(parley.MisuseError):
        e.stats


def test_calling_the_session_from_its_own_callback_is_busy(engine):
    with engine.session(template="raw") as s:
        # The BusyError raised inside the callback stops the reply and comes out of send.
        with pytest.raises(parley.BusyError) as info:
            s.send("Once", **LONG, on_text=lambda piece: s.send("again"))
        assert info.value.status == 8
        assert s.last_stats.generated_tokens < 200
        s.send(" more", **GREEDY)  # usable again


def test_calling_the_session_from_a_stream_loop_is_busy(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.BusyError):
            for _ in s.stream("Once", **LONG):
                s.tokens


def test_a_held_stream_left_early_is_named_by_busy(engine):
    with engine.session(template="raw") as s:
        it = s.stream("Once", **LONG)
        for _ in it:
            break  # `it` still holds the generator: the reply waits, paused
        for call in (lambda: s.send(" more", **GREEDY), lambda: s.tokens, lambda: s.info,
                     lambda: s.export(), lambda: list(s.stream(" more", **GREEDY))):
            with pytest.raises(parley.BusyError,
                               match=r"a stream\(\) of this session is still open.*close\(\)"):
                call()
        it.close()
        assert s.last_stats.generated_tokens == 1
        assert s.send(" more", **GREEDY)  # closed: the reply stopped, the session is free


def test_busy_names_no_stream_when_none_is_open(engine):
    with engine.session(template="raw") as s:
        for _ in s.stream("Once", **GREEDY):
            pass  # finished: no longer open
        with contextlib.closing(s.stream(" more", **LONG)) as it:
            next(it)
        with pytest.raises(parley.BusyError) as info:
            s.send("Once", **LONG, on_text=lambda piece: s.send("again"))
        assert "stream" not in info.value.message


def test_repr_and_id_work_while_a_reply_runs(engine):
    with engine.session(id="shown", template="raw") as s:
        for _ in s.stream("Once", **LONG):
            assert repr(s) == "<parley.Session 'shown'>"
            assert s.id == "shown"
            break


def test_interrupt_from_the_callback_cancels(engine):
    with engine.session(template="raw") as s:
        pieces = []

        def on_text(piece):
            pieces.append(piece)
            if len(pieces) == 2:
                s.interrupt()

        with pytest.raises(parley.CancelledError) as info:
            s.send("Once", **LONG, on_text=on_text)
        assert info.value.status == 9
        assert info.value.reply == "".join(pieces)
        assert s.last_stats.generated_tokens < 200
        assert s.turns[-1] == ("assistant", info.value.reply)  # the partial reply is kept


def test_interrupt_from_another_thread_cancels_a_stream(engine):
    with engine.session(template="raw") as s:
        first_piece = threading.Event()
        interrupted = threading.Event()

        def stop_it():
            first_piece.wait(timeout=60)
            s.interrupt()
            interrupted.set()

        stopper = threading.Thread(target=stop_it)
        stopper.start()
        with pytest.raises(parley.CancelledError):
            for _ in s.stream("Once", **LONG):
                first_piece.set()
                interrupted.wait(timeout=60)  # the reply waits for the loop body
        stopper.join()
        assert s.last_stats.generated_tokens < 200


def test_an_exception_in_the_callback_propagates_and_stops(engine):
    class Stop(Exception):
        pass

    def on_text(piece):
        raise Stop(piece)

    with engine.session(template="raw") as s:
        with pytest.raises(Stop):
            s.send("Once", **LONG, on_text=on_text)
        assert s.last_stats.generated_tokens == 1
        assert s.send(" more", **GREEDY)


def test_an_exception_in_a_stream_loop_stops_the_reply(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(KeyError):
            for _ in s.stream("Once", **LONG):
                raise KeyError("stop")
        assert s.last_stats.generated_tokens == 1
        assert s.send(" more", **GREEDY)


def test_a_store_operation_without_a_store(engine):
    with pytest.raises(parley.NotFoundError):
        engine.open_session("never-stored")
    with engine.session(template="raw") as s:
        with pytest.raises(parley.UnsupportedError):
            s.suspend()


def test_a_used_id_is_an_invalid_argument(engine):
    with engine.session(id="taken"):
        with pytest.raises(parley.InvalidArgumentError):
            engine.session(id="taken")


def test_rewinding_past_the_start_is_an_invalid_argument(engine):
    with engine.session(template="raw") as s:
        with pytest.raises(parley.InvalidArgumentError):
            s.rewind(1)


@pytest.mark.parametrize("copy_of", [lambda e: pickle.loads(pickle.dumps(e)), copy.copy,
                                     copy.deepcopy], ids=["pickle", "copy", "deepcopy"])
def test_an_error_is_copied_and_pickled_as_it_is(engine, copy_of):
    s = engine.session(template="raw")
    with pytest.raises(parley.CancelledError) as info:
        s.send("Once", on_text=lambda piece: s.interrupt(), **LONG)
    for error in (info.value, parley.BusyError("busy"), parley.ParleyError("new", 99)):
        copied = copy_of(error)
        assert type(copied) is type(error)
        assert str(copied) == str(error)
        assert copied.args == error.args
        assert copied.message == error.message
        assert copied.status == error.status
        assert getattr(copied, "reply", None) == getattr(error, "reply", None)
    assert info.value.reply and copy_of(info.value).reply == info.value.reply
