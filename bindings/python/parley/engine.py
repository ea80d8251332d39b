"""Engine: a loaded model, its backend and its sessions."""

import ctypes

from . import _interrupts, _library, _native, _options
from ._buffers import read_ids, read_text
from ._handle import NativeHandle
from .errors import check
from .info import EngineStats, ModelInfo, StoredSessionInfo
from .session import Session


class Engine(NativeHandle):
    """A loaded model. Use it from any thread; close it with close() or a `with` block (with a
    store, its open sessions' KV is spilled first; closing twice is a no-op; a call under way
    on another thread ends first, and the engine is freed as it returns).

    Sessions stay usable after the engine is closed: the library frees it when the last one
    closes, so handles may be closed (or garbage-collected) in any order.

    Nothing stops a model's load: Ctrl-C during Engine(...) raises KeyboardInterrupt once the
    load has ended (the engine is then closed as it is collected).
    """

    def __init__(self, model, store=None, device="auto", kv="int8", threads=0, kv_budget=0,
                 idle_spill_ms=0, context=0):
        lib = _library.lib()
        o = _options.engine_options(lib, model, store, device, kv, threads, kv_budget,
                                    idle_spill_ms, context)
        handle = _native.engine_p()
        # Loading may take long and log: Ctrl-C is raised once the handle has an owner.
        with _interrupts.deferred():
            check(lib.parley_engine_open(ctypes.byref(o), ctypes.byref(handle)))
            super().__init__(lib, handle.value, lib.parley_engine_close, "engine")

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
