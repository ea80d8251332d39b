"""Engine: a loaded model, its backend and its sessions."""

import ctypes
import threading

from . import _calls, _interrupts, _library, _native, _options
from ._buffers import read_ids, read_text
from ._handle import NativeHandle
from .errors import check, error_for, last_error
from .info import EngineStats, ModelInfo, StoredSessionInfo
from .session import Session


class Engine(NativeHandle):
    """A loaded model. Use it from any thread; close it with close() or a `with` block (with a
    store, its open sessions' KV is spilled first; closing twice is a no-op; a call under way
    on another thread ends first, and the engine is freed as it returns).

    Sessions stay usable after the engine is closed: the library frees it when the last one
    closes, so handles may be closed (or garbage-collected) in any order.

    Ctrl-C stops a model's load: made on the main thread, the load runs on a worker thread
    of the binding's while the caller waits where Python runs signal handlers at once. What a
    handler raises there (KeyboardInterrupt, a program's own SIGINT handler's exception) stops
    the load at the library's next progress report (about once per layer of the model), as
    on_load_progress returning True would, and Engine(...) raises it once the load has let
    go of what it took: no engine is left open, also when the load had just ended. Loads on
    other threads run on them: signals are not theirs.
    """

    def __init__(self, model, store=None, device="auto", kv="int8", threads=0, kv_budget=0,
                 idle_spill_ms=0, context=0, *, on_load_progress=None):
        """Loads `model` (a GGUF file or a Hugging Face model directory) and starts its backend.

        on_load_progress(fraction) is called as the load goes on, on this thread (also when
        the load itself runs on a worker: see the class): first with 0.0, then with growing
        fractions below 1 as the weights are converted and taken by the backend, last with
        exactly 1.0 once the engine is ready (its store opened). A fraction never decreases,
        and only the last one is 1.0. Returning True (the bool itself) stops the load, also
        at 1.0: Engine(...) then raises CancelledError and nothing stays loaded; any other
        value (None, a count) goes on. An exception it raises stops the load the same way and
        propagates from Engine(...) as it was raised; it is not called again after that. It
        may use other engines and their sessions.
        Arguments of the wrong type (a non-callable on_load_progress included) raise
        InvalidArgumentError before anything is loaded."""
        lib = _library.lib()
        o = _options.engine_options(lib, model, store, device, kv, threads, kv_budget,
                                    idle_spill_ms, context)
        _options.callable_arg("on_load_progress", on_load_progress)
        stopping = threading.Event()  # set once the caller stopped waiting for the load
        owned = []

        def work(ask):
            raised = []

            def on_progress(fraction, _user):
                # Nothing may propagate into C: stop. An exception of the program's callback
                # run here (no worker) is kept for the open to raise as it returns.
                try:
                    if raised or stopping.is_set():
                        return 1
                    if ask is None:
                        return 0
                    return 0 if ask(fraction) is False else 1
                except BaseException as e:  # noqa: B902 - raised once the open returns
                    raised.append(e)
                    return 1

            # Passed even without a callback of the program's: reports are where a Ctrl-C
            # stops the load. The struct keeps it alive (ctypes' _objects) during the call.
            o.on_load_progress = _native.parley_progress_fn(on_progress)
            handle = _native.engine_p()
            status = lib.parley_engine_open(ctypes.byref(o), ctypes.byref(handle))
            if status == 0:
                # Owned here, at once: the waiting thread may have stopped waiting as the
                # open ended, and then only this object can close the engine.
                NativeHandle.__init__(self, lib, handle.value, lib.parley_engine_close,
                                      "engine")
                owned.append(True)
            if raised:
                raise raised[0]
            # Read here: parley_last_error() belongs to the thread that made the call.
            return error_for(status, last_error()) if status else None

        def report(fraction):
            # Only True itself stops, as with on_text.
            return on_load_progress(fraction) is True

        on_report = None if on_load_progress is None else report
        try:
            if _calls.on_worker():
                error = _calls.run(work, on_report, stopping.set)
            else:
                # No worker (another thread, or the main one as the interpreter exits): on the
                # main thread a Ctrl-C is then raised once the handle has an owner.
                with _interrupts.deferred():
                    error = work(on_report)
            if error is not None:
                raise error
        except BaseException:  # noqa: B902 - whatever ended the wait, the engine goes
            if owned:
                self.close()
            raise

    def __repr__(self):
        return "<parley.Engine %s>" % ("closed" if self._handle is None else hex(self._handle))

    def session(self, id=None, system=None, template=None, scope=None, overflow="error"):
        """Starts a conversation. template: None (the model's), "raw", "llama2", "chatml",
        "zephyr" or "mistral"; overflow: "error" or "drop_oldest" (Session.overflow tells it
        and changes it later)."""
        o = _options.session_options(self._lib, id, system, template, scope, overflow)
        out = _native.session_p()
        with self._use() as handle:
            check(self._lib.parley_session_create(handle, ctypes.byref(o), ctypes.byref(out)))
            return Session(self._lib, out.value)

    def open_session(self, id):
        """Reopens a stored conversation, also one stored by an earlier process; its overflow
        policy and template are the ones it was stored with.
        Raises InvalidArgumentError for an empty id or a session already open; NotFoundError
        without a store or when no such conversation is stored; ContextFullError (since 0.8;
        CorruptError before) when the conversation is longer than this engine's context: an
        engine whose context holds it opens it, and nothing is changed; CorruptError when its
        transcript cannot be read; StorageError when the store fails."""
        data, out = _options.text_arg("id", id, optional=False), _native.session_p()
        with self._use() as handle:
            check(self._lib.parley_session_open(handle, data, ctypes.byref(out)))
            return Session(self._lib, out.value)

    def import_session(self, json, id=None):
        """A session of a conversation Session.export() wrote (here, in an earlier run, on
        another machine), or JSON of that shape written elsewhere; json is a str. id: the new
        session's id, or None to keep the conversation's (one is generated when it has none).
        When every message has its tokens and the JSON is of this engine's model, the ids are
        kept as they were and the next send (or prepare()) computes their KV (the texts are
        not checked against them: to edit a message's text, drop its "tokens", and the
        conversation is taken from its texts); otherwise each user message and the reply
        after it are added as add_exchange() adds them. With a store the session is stored
        as a new one.
        Raises InvalidArgumentError for JSON that is not such a conversation (the message
        names the first wrong field), an unknown template, messages out of order, a token
        outside this model's vocabulary, or an id that is "" or already used;
        ContextFullError when the conversation does not fit the context."""
        data = _options.text_arg("json", json, optional=False)
        new_id = _options.text_arg("id", id)
        out = _native.session_p()
        with self._use() as handle:
            check(self._lib.parley_session_import(handle, data, new_id, ctypes.byref(out)))
            return Session(self._lib, out.value)

    def sessions(self):
        """Ids of the stored conversations, oldest first; [] without a store."""
        with self._use() as handle:
            text = read_text(lambda buf, cap, needed:
                             self._lib.parley_store_list_sessions(handle, buf, cap, needed))
        return text.split("\n") if text else []

    def delete_session(self, id):
        """Deletes a stored conversation that is not open."""
        data = _options.text_arg("id", id, optional=False)
        with self._use() as handle:
            check(self._lib.parley_session_delete(handle, data))

    def stored_session_info(self, id):
        """A stored conversation's dates, turns and stored KV, without opening it. Raises
        NotFoundError without a store or when no such conversation is stored."""
        s = _native.sized(_native.StoredSessionInfo)
        data = _options.text_arg("id", id, optional=False)
        with self._use() as handle:
            check(self._lib.parley_store_get_session_info(handle, data, ctypes.byref(s)))
        return StoredSessionInfo.from_struct(s)

    @property
    def stats(self):
        s = _native.sized(_native.EngineStats)
        with self._use() as handle:
            check(self._lib.parley_engine_get_stats(handle, ctypes.byref(s)))
        return EngineStats.from_struct(s)

    @property
    def model_info(self):
        s = _native.sized(_native.ModelInfo)
        with self._use() as handle:
            check(self._lib.parley_engine_get_model_info(handle, ctypes.byref(s)))
        return ModelInfo.from_struct(s)

    def tokenize(self, text, bos=False):
        """Token ids of `text` (control tokens are never produced from text)."""
        data = _options.text_arg("text", text, optional=False)
        # Each id stands for one byte of the text at least, but for BOS and a word's leading
        # space: usually one call.
        with self._use() as handle:
            return read_ids(lambda ids, cap, needed:
                            self._lib.parley_tokenize(handle, data, 1 if bos else 0, ids, cap,
                                                      needed),
                            likely_cap=len(data) + 2)

    def detokenize(self, ids):
        """The text of token ids."""
        array, n = _options.ids_arg(ids)
        with self._use() as handle:
            return read_text(lambda buf, cap, needed:
                             self._lib.parley_detokenize(handle, array, n, buf, cap, needed))
