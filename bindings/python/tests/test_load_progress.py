"""Engine(on_load_progress=...): how far the load has come, on the caller's thread, and a way
to give it up."""

import threading

import pytest

import parley

STOPPED = "the load progress callback asked to stop"


def on_a_thread(call):
    """call() on a thread of its own (not the main one): what it returned, or raised."""
    outcome = {}

    def run():
        try:
            outcome["returned"] = call()
        except BaseException as e:  # noqa: B902 - handed to the test
            outcome["raised"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "raised" in outcome:
        raise outcome["raised"]
    return outcome["returned"]


def in_place(call):
    return call()


# Engine() from the main thread hands the load to a worker and runs the callback here; from
# another thread the load and the callback run on that thread.
WHERE = pytest.mark.parametrize("where", [in_place, on_a_thread], ids=["main", "thread"])


class Reports:
    """An on_load_progress that records each fraction and the thread it came on, and returns
    what `answer(fraction)` says."""

    def __init__(self, answer=lambda fraction: None):
        self.fractions = []
        self.threads = set()
        self._answer = answer

    def __call__(self, fraction):
        self.fractions.append(fraction)
        self.threads.add(threading.get_ident())
        return self._answer(fraction)


@WHERE
def test_reports_rise_from_0_to_exactly_1_on_the_calling_thread(model_path, where):
    reports = Reports()
    callers = []

    def load():
        callers.append(threading.get_ident())
        with parley.Engine(model_path, threads=2, on_load_progress=reports) as e:
            return e.model_info.n_vocab

    assert where(load) == 512
    fractions = reports.fractions
    assert len(fractions) > 2  # 0, the weights on their way, 1
    assert all(isinstance(f, float) and 0.0 <= f <= 1.0 for f in fractions), fractions
    assert fractions[0] == 0.0
    assert fractions[-1] == 1.0 and fractions.count(1.0) == 1
    assert all(a < b for a, b in zip(fractions, fractions[1:])), fractions
    assert reports.threads == set(callers)


@WHERE
@pytest.mark.parametrize("at", ["first", "last"])
def test_returning_true_stops_the_load(model_path, tmp_path, where, at):
    # At 1 too: the engine was ready, and goes as it came.
    reports = Reports(lambda fraction: fraction == 0.0 if at == "first" else fraction == 1.0)
    with pytest.raises(parley.CancelledError) as info:
        where(lambda: parley.Engine(model_path, store=tmp_path / "chats.sqlite",
                                    on_load_progress=reports))
    assert info.value.status == 9
    assert STOPPED in info.value.message
    assert info.value.reply is None
    assert reports.fractions[-1] == (0.0 if at == "first" else 1.0)  # not called after
    if at == "first":
        assert reports.fractions == [0.0]
    # The stopped load left the store as any engine may open it.
    with parley.Engine(model_path, store=tmp_path / "chats.sqlite") as e:
        with e.session(id="after", template="raw") as s:
            s.add_exchange("Once", " upon a time")
        assert e.sessions() == ["after"]


@pytest.mark.parametrize("answer", [1, "stop", None, False, 1.0], ids=repr)
def test_only_true_itself_stops_the_load(model_path, answer):
    # A truthy count or string goes on, as with on_text: only the bool True is a verdict.
    reports = Reports(lambda fraction: answer)
    with parley.Engine(model_path, on_load_progress=reports):
        pass
    assert reports.fractions[-1] == 1.0


class Refused(Exception):
    pass


@WHERE
def test_an_exception_of_the_callback_stops_the_load_and_propagates_as_it_was(model_path,
                                                                             where):
    raised = []

    def on_load_progress(fraction):
        if fraction > 0.0:
            raised.append(Refused("no room for %r" % fraction))
            raise raised[-1]

    reports = Reports(on_load_progress)
    with pytest.raises(Refused) as info:
        where(lambda: parley.Engine(model_path, on_load_progress=reports))
    assert len(raised) == 1 and info.value is raised[0]
    assert len(reports.fractions) == 2  # 0, then the one that raised: none after it


@pytest.mark.parametrize("fn", [5, "print", 1.0], ids=repr)
def test_an_on_load_progress_that_is_not_callable_is_refused_before_loading(tmp_path, fn):
    # Refused in Python, before the library looks for the (missing) model.
    with pytest.raises(parley.InvalidArgumentError, match="^PARLEY_E_INVALID_ARGUMENT: "
                       "on_load_progress must be callable or None, not "):
        parley.Engine(tmp_path / "no-such-model.gguf", on_load_progress=fn)


def test_on_load_progress_is_a_keyword_argument(model_path):
    with pytest.raises(TypeError):
        parley.Engine(model_path, None, "auto", "int8", 0, 0, 0, 0, print)


def test_the_callback_may_use_another_engine(engine, model_path):
    ids = []

    def on_load_progress(fraction):
        if not ids:
            ids.extend(engine.tokenize("Once"))
            with engine.session(template="raw") as s:
                s.add_exchange("Once", " upon")

    with parley.Engine(model_path, on_load_progress=on_load_progress) as e:
        assert e.tokenize("Once") == ids != []
