"""Session: one conversation."""

import ctypes
import functools
import threading

from . import _calls, _native, _options
from ._buffers import read_ids, read_text
from ._handle import NativeHandle
from ._streaming import stream_pieces
from .errors import BusyError, CancelledError, ParleyError, error_for, last_error
from .info import ROLES, ReplyScore, SessionInfo, TokenCount, TurnStats

# Stands for "no user message" where text is expected: None is a NULL text, which send refuses.
_CONTINUE = object()

# Added to a BusyError while a stream of the session is still open: its reply, paused until
# the iterator is read on or closed, holds the session, which is otherwise hard to guess.
_STREAM_OPEN = ("a stream() of this session is still open (its reply waits until the "
                "iterator is read on or closed): finish it or call its close() first")


class Session(NativeHandle):
    """One conversation. Use it from one thread at a time (a second concurrent call raises
    BusyError); interrupt() may be called from any thread. Close it with close() or a `with`
    block (with a store its KV is spilled first; closing twice is a no-op; a reply running on
    another thread is stopped, as by interrupt()); it keeps its engine alive until then.

    Ctrl-C: the calls that interrupt() stops (send, continue_reply, stream, stream_continue,
    prepare, score_replies), made on the main thread, have the library work on a worker
    thread while the caller waits, where Python runs signal handlers at once. What a handler
    raises there (KeyboardInterrupt, a program's own SystemExit or exception; asyncio's
    first Ctrl-C raises nothing, only its second does) stops the call as interrupt() does,
    also while a long message is still being read, and is raised from it once the library
    has stopped (within a chunk of the message or a token); the session keeps what an
    interrupt keeps and stays usable. on_text still runs on the caller's thread. Calls from other threads run on them: signals are not theirs."""

    def __init__(self, lib, handle):
        super().__init__(lib, handle, lib.parley_session_close, "session")
        self.last_stats = None  # TurnStats of the last reply, also one an error kept
        # The streams whose reply has started and not ended (see _STREAM_OPEN); a lock, as
        # a BusyError may be raised on another thread than the one that reads the stream.
        self._open_streams = set()
        self._open_streams_lock = threading.Lock()
        # An id never changes: read once, so that repr() and .id work while a reply runs
        # (get_info would then be BUSY).
        self._id = self.info.id

    def __repr__(self):
        return "<parley.Session %s>" % ("closed" if self._handle is None else repr(self._id))

    def close(self):
        """Closes the session (with a store, its KV is spilled first, so that reopening it is
        instant). A reply running on another thread, or paused in an open stream, is stopped
        as by interrupt(): its send() or stream then ends as interrupted, raising
        CancelledError with the partial reply, which is kept, and the session is freed as that
        call returns. Closing twice is a no-op."""
        super().close()

    # ---- Generation -------------------------------------------------------------------------

    def send(self, text, *, max_tokens=256, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05,
             repeat_penalty=1.0, repeat_last_n=64, seed=0, ignore_eos=False, stop=None,
             reply_prefix=None, logit_bias=None, format=None, json_schema=None, on_text=None):
        """Adds a user message and returns the whole reply; last_stats then describes it.

        max_tokens: the most tokens the reply may have; 0 = up to the context's end.
        stop: stop strings (a list or tuple of str, at most 16, each 1-256 bytes of UTF-8);
        the reply ends before the first of them it shows, which is neither returned, streamed
        nor kept. Text that may be the start of one reaches on_text once the next tokens show
        it is not. last_stats.stop_reason and .stop_index (an index in stop) say why the reply
        ended.
        reply_prefix: text (a str) the reply starts with, tokenized as plain text, from which
        the model goes on: a format or a voice to keep ("{", "*nods* "); with the "raw"
        template it continues the message (" and" starts a word, "," joins the last one).
        It is streamed first,
        returned and kept as the reply's start; max_tokens and stop apply only to what follows
        it. None or "" = none.
        logit_bias: {token id: bias} (or (token id, bias) pairs) added to those tokens' logits
        before sampling: a positive bias makes a token likelier, a negative one rarer, and
        float("-inf") bans it. The ids are the model's (Engine.tokenize gives a word's, end_ids
        those that end a reply), each listed once; a NaN or +inf bias (a C float: past its
        range a bias is infinite), an id outside the vocabulary or banning every token raises
        InvalidArgumentError. None or {} = none.
        format (since 0.11): "text" (or None, the default) or "json": the reply is then one
        JSON object. Each token is drawn only among those that keep the reply the start of
        one, and the reply ends where the object closes (stop_reason "format_end"); max_tokens,
        stop, the context's end or an interrupt can still cut it short, so it is whole only
        with "format_end". reply_prefix must then be the start of an object ("{",
        '{"name": '); a logit_bias that bans every token the format allows at some point, or
        another format, raises InvalidArgumentError. Tell the model, too, what to write (the
        system prompt, the message): the format only keeps it from anything else.
        json_schema (since 0.12): a JSON Schema the object must satisfy, as JSON text (a str)
        or a value json.dumps takes (a dict); format is then "json" when left out, and
        format="text" raises InvalidArgumentError. The object lists the schema's properties
        in its order (a dict's key order), optional ones maybe left out, and no others. The
        subset taken: type, enum, const; properties, required, additionalProperties; items,
        minItems, maxItems; anyOf/oneOf whose branches start differently (an Optional field:
        a type or null); $ref within the schema ("#/$defs/X"), not recursive; true/false;
        annotations (title, description, ...) are ignored. Another keyword that constrains
        values (minLength, pattern, minimum, allOf, ...) raises UnsupportedError; a value
        json.dumps refuses, text that is not JSON, a malformed schema or one no object
        satisfies raise InvalidArgumentError, the library's message naming the place as a JSON
        pointer ("/properties/age"). None or "" = any object.
        on_text(piece) is called with each piece of text as it is generated, on this thread;
        returning True (the bool itself) stops the reply there (send then returns the partial
        reply, stop_reason "cancelled"); any other value (None, or the count
        sys.stdout.write returns) goes on. An exception it raises stops the reply and
        propagates from send. So does Ctrl-C (on the main thread; see the class): the reply
        stops at its next token, or while a long message is still being read, is kept as
        interrupt() keeps one, and send raises KeyboardInterrupt (or what the program's own
        SIGINT handler raises).
        Arguments of the wrong type raise InvalidArgumentError before anything is sent.
        Errors that keep the turn carry the reply the session kept as .reply, and last_stats
        describes it: CancelledError (interrupt(), or close() from another thread, stopped the
        reply), OutOfMemoryError when the KV budget ran out during the reply (it ends there)
        or storing the finished turn failed, and StorageError (the store did not take the
        turn: it is kept in memory and stored with the next one; or another engine on the
        same store changed the conversation, whose turns then stay in memory only). An
        OutOfMemoryError raised before the reply, and every other error, leave last_stats as
        it was and have no .reply (None)."""
        options = _options.generate_options(self._lib, max_tokens, temperature, top_k, top_p,
                                            min_p, repeat_penalty, repeat_last_n, seed,
                                            ignore_eos, stop, reply_prefix, logit_bias,
                                            format, json_schema)
        return self._reply(_options.text_arg("text", text, optional=False), options, on_text)

    def continue_reply(self, *, max_tokens=256, temperature=0.8, top_k=40, top_p=0.95,
                       min_p=0.05, repeat_penalty=1.0, repeat_last_n=64, seed=0,
                       ignore_eos=False, stop=None, reply_prefix=None, logit_bias=None,
                       format=None, json_schema=None, on_text=None):
        """Generates without a new user message and returns the text this call generated
        (reply_prefix included), with the options, on_text and last_stats of send(). What it
        generates depends on how the conversation ends:
        - a user message without its reply (rewind(1) dropped it): the reply to it. With the
          same options and seed it is the reply the dropped one was; with another seed,
          another take on it.
        - a reply left open (it stopped at max_tokens, before a stop string, at the end of the
          context, when interrupted, or was written with add_exchange): more of it. The new
          text is appended to that reply, which stays one turn; greedy continuation of a reply
          cut at max_tokens gives what one longer reply would have. A reply cut inside a
          character ends with a U+FFFD for its first bytes: the new text then starts with the
          whole character, which replaces that U+FFFD in the turn.
        max_tokens and stop apply to the new text. reply_prefix starts a reply that has no
        text yet, and (since 0.6) steers one under way: the reply goes on with it, and the
        model from there (" and then the dragon" starts a word, "," joins the last one).
        With format="json" the reply so far and reply_prefix must be the start of an object
        (with a json_schema, of one the schema accepts).
        last_stats.prompt_tokens is 0.
        Raises InvalidArgumentError when there is no user message yet or when the model ended
        the last reply (send a message or rewind it). The errors that keep what was generated
        are those of send(), with .reply the new text: CancelledError, OutOfMemoryError (the
        KV budget ran out during the reply) and StorageError."""
        options = _options.generate_options(self._lib, max_tokens, temperature, top_k, top_p,
                                            min_p, repeat_penalty, repeat_last_n, seed,
                                            ignore_eos, stop, reply_prefix, logit_bias,
                                            format, json_schema)
        return self._reply(_CONTINUE, options, on_text)

    def stream(self, text, *, max_tokens=256, temperature=0.8, top_k=40, top_p=0.95,
               min_p=0.05, repeat_penalty=1.0, repeat_last_n=64, seed=0, ignore_eos=False,
               stop=None, reply_prefix=None, logit_bias=None, format=None, json_schema=None):
        """Like send(), but returns an iterator of the reply's pieces, each yielded as it is
        generated. Generation waits while the loop body runs, so the body counts as inside
        the reply (calls on this session raise BusyError); leaving the loop early (break, an
        exception) stops the reply there when the loop held the only reference to the
        iterator, as `for piece in s.stream(...)` does; so do close(), the iterator's
        collection, and the interpreter's exit for an iterator still half-read then.
        Arguments are checked here; nothing is sent before the first next(). The errors of
        send() are raised from the loop, those that keep the turn with .reply (the pieces
        yielded) and last_stats describing it.
        Holding the iterator keeps the reply paused, and the session busy, until it is
        finished, closed or collected: after `it = s.stream(...)`, leaving `for piece in it`
        early leaves the reply waiting, and other calls on the session raise BusyError. Close
        it then, with `with contextlib.closing(s.stream(...)) as it:` or it.close()."""
        options = _options.generate_options(self._lib, max_tokens, temperature, top_k, top_p,
                                            min_p, repeat_penalty, repeat_last_n, seed,
                                            ignore_eos, stop, reply_prefix, logit_bias,
                                            format, json_schema)
        return self._stream(_options.text_arg("text", text, optional=False), options)

    def stream_continue(self, *, max_tokens=256, temperature=0.8, top_k=40, top_p=0.95,
                        min_p=0.05, repeat_penalty=1.0, repeat_last_n=64, seed=0,
                        ignore_eos=False, stop=None, reply_prefix=None, logit_bias=None,
                        format=None, json_schema=None):
        """Like continue_reply(), but returns an iterator of the pieces of the text it
        generates, each yielded as it is generated; the loop, leaving it early and the errors
        are as with stream(). Nothing is generated before the first next(), which raises what
        continue_reply() would (InvalidArgumentError when there is nothing to continue).
        As with stream(), holding the iterator keeps the reply paused, and the session busy,
        until it is finished, closed or collected: use `with contextlib.closing(
        s.stream_continue(...)) as it:`, or call it.close(), when the loop may be left early."""
        options = _options.generate_options(self._lib, max_tokens, temperature, top_k, top_p,
                                            min_p, repeat_penalty, repeat_last_n, seed,
                                            ignore_eos, stop, reply_prefix, logit_bias,
                                            format, json_schema)
        return self._stream(_CONTINUE, options)

    def _stream(self, data, options):
        """stream() and stream_continue(): data is the UTF-8 message, or _CONTINUE."""
        self._live()  # fail now, not at the first next()
        token = object()  # this stream, among the session's open ones

        def opened():
            with self._open_streams_lock:
                self._open_streams.add(token)

        def ended():
            with self._open_streams_lock:
                self._open_streams.discard(token)

        run = functools.partial(self._generate, data, options, stream=token)
        return stream_pieces(run, opened, ended, self._interrupt_quietly)

    def _reply(self, data, options, on_text):
        """send() and continue_reply(): the text generated, gathered from its pieces."""
        _options.callable_arg("on_text", on_text)
        pieces = []

        def on_piece(piece):
            pieces.append(piece)
            # Only True itself stops: write() and the like return counts, not verdicts.
            return on_text is not None and on_text(piece) is True

        # Without on_text the pieces are gathered on whichever thread runs the call.
        self._generate(data, options, on_piece, lambda: "".join(pieces),
                       on_caller=on_text is not None)
        return "".join(pieces)

    def _generate(self, data, options, on_piece, reply_so_far, stream=None, on_caller=True):
        """One parley_session_send of data (UTF-8 bytes), or parley_session_continue for
        _CONTINUE. on_piece(str) returns True to stop the reply; it runs on the calling
        thread, or with on_caller=False wherever the call runs. stream: the stream making
        the call, if one is."""
        stopped_here = []

        def call(handle, ask):
            deliver = on_piece if ask is None else ask
            raised = []

            def on_text(utf8, length, _user):
                # Nothing may propagate into C: stop. An exception of on_piece run here (no
                # worker) is kept for the call to raise as it returns.
                try:
                    # Closed meanwhile: close() may have come before the reply began, when
                    # the library had nothing to interrupt yet.
                    if self._handle is None:
                        return 1
                    verdict = deliver(ctypes.string_at(utf8, length).decode(
                        "utf-8", errors="replace"))
                    if verdict is True:
                        stopped_here.append(True)
                    return 0 if verdict is False else 1
                except BaseException as e:  # noqa: B902 - raised once the call returns
                    raised.append(e)
                    return 1

            callback = _native.parley_text_fn(on_text)  # alive until the call returns
            outcome = self._call_generate(handle, data, options, callback, stream)
            if raised:
                raise raised[0]
            return outcome

        status, error, kept = self._stoppable(call, on_piece if on_caller else None)
        if status == CancelledError.status and stopped_here:
            return
        if error is not None:
            if kept:
                error.reply = reply_so_far()
            raise error

    def _call_generate(self, handle, data, options, callback, stream):
        """The C call of _generate, on the thread that runs it: (status, its ParleyError or
        None, whether the turn was kept). Sets last_stats for a kept turn here, so that an
        exception the waiting thread raises meanwhile leaves it right."""
        stats = _native.sized(_native.TurnStats)
        # The library fills stats only when the turn is kept, OK or not (an OUT_OF_MEMORY
        # may or may not keep it), and always writes a kv_source >= 0: -1 left means unkept.
        stats.kv_source = -1
        if data is _CONTINUE:
            status = self._lib.parley_session_continue(handle, ctypes.byref(options),
                                                       callback, None, ctypes.byref(stats))
        else:
            status = self._lib.parley_session_send(handle, data, ctypes.byref(options),
                                                   callback, None, ctypes.byref(stats))
        error = self._error(status, last_error(), stream) if status else None
        kept = stats.kv_source >= 0
        if kept:
            self.last_stats = TurnStats.from_struct(stats)
        return status, error, kept

    def _stoppable(self, call, on_item=None):
        """call(handle, ask) for a call into C that interrupt() stops, with the handle held
        as _use holds it. From the main thread it runs on a worker (_calls), so that Ctrl-C
        stops it at once; ask(item) then has on_item(item) run on the calling thread and
        returns its result (_calls.STOP once that thread stopped waiting). Elsewhere it runs
        here and ask is on_item. ask is None when on_item is. The library's last error is
        read by call, on its thread."""
        def work(ask):
            with self._use() as handle:
                return call(handle, ask)

        if not _calls.on_worker():
            return work(on_item)
        return _calls.run(work, on_item, self._interrupt_quietly)

    def _error(self, status, message, stream=None):
        """The ParleyError for a failed call on this session. A BusyError says so when a
        stream of this session other than `stream` (the one making the call) is open."""
        if status == BusyError.status:
            with self._open_streams_lock:
                others = self._open_streams - {stream}
            if others:
                message = "%s; %s" % (message, _STREAM_OPEN)
        return error_for(status, message)

    def _check(self, status):
        """errors.check() for calls on this session, with _error()'s BusyError."""
        if status != 0:
            raise self._error(status, last_error())

    def _outcome(self, status):
        """The error of a failed call, or None; on the thread that made the call, whose last
        error it reads."""
        return self._error(status, last_error()) if status else None

    @staticmethod
    def _raise_error(error):
        if error is not None:
            raise error

    def prepare(self):
        """Does now the work the next send() or continue_reply() would begin with, so that its
        first token comes sooner: call it while a level or a window loads, or on a thread of
        your own, then send when the user speaks. KV in the store (a reopened, suspended or
        spilled session) comes back; tokens without KV are computed, all but the last; a
        conversation with no message yet computes its opening (the system prompt and the
        template's markers) in whole blocks of 16 tokens and holds it for its first turn.
        Calling it again when nothing is left costs nothing, and replies are the same with or
        without it. Returns a TurnStats of this work: reused_tokens, computed_tokens,
        restore_ms and kv_source ("restored" or "rebuilt" when the KV came from the store);
        the other counts are 0, stop_reason and stop_index None. last_stats is unchanged.
        Raises CancelledError when interrupt() stopped it (what was computed is kept); Ctrl-C
        stops it the same way and raises KeyboardInterrupt."""
        stats = _native.sized(_native.TurnStats)
        self._raise_error(self._stoppable(lambda handle, _ask: self._outcome(
            self._lib.parley_session_prepare(handle, ctypes.byref(stats)))))
        return TurnStats.from_struct(stats)

    def count_tokens(self, text):
        """Measures a message before it is sent: a TokenCount of the tokens send(text) would
        add before its reply (its last_stats.prompt_tokens) and of the context then left for
        the reply (0: it does not fit; send raises ContextFullError, or with overflow
        "drop_oldest" drops the oldest exchanges). Nothing is computed and the session is
        unchanged. The text is taken as send() takes it."""
        data = _options.text_arg("text", text, optional=False)
        prompt_tokens, context_left = ctypes.c_uint32(), ctypes.c_uint32()
        with self._use() as handle:
            self._check(self._lib.parley_session_count_tokens(handle, data,
                                                              ctypes.byref(prompt_tokens),
                                                              ctypes.byref(context_left)))
        return TokenCount(prompt_tokens.value, context_left.value)

    def score_replies(self, message, replies, with_end=False):
        """How likely the model finds each of several replies to a message, without generating
        and without changing the conversation: a list of ReplyScore, in the order of replies,
        each with the natural log of the probability that the model, after the conversation so
        far and message, replies with exactly that text (the sum over its tokens, at
        temperature 1: no sampling options apply) and the number of tokens scored. The most
        likely reply is the model's pick among a character's possible lines or actions, or
        the label it gives a message. A longer reply has more tokens to pay for; logprob /
        n_tokens compares replies per token. with_end=True scores the end of each reply too, so
        that "Yes" is not also counted as the start of "Yes, but": the chance that the reply
        ends there as a generated one would, at any token that ends it (the template's end of
        reply, EOS, the model's other end ids, with "raw" BOS), their probabilities added.
        message is taken as send() takes it, each reply as add_exchange() takes it ("" is 0
        tokens, logprob 0 unless the end is scored).
        message None (since 0.6) adds no message: each reply is scored as what
        continue_reply() would generate, the missing reply to the last user message (after
        rewind(1)) or more of the open last reply (" and" then starts a word, "," joins the
        last one); which ending the model finds likeliest for a line it began.
        Raises InvalidArgumentError for no replies or more than 256, or for message None with
        nothing to go on from (as continue_reply()); ContextFullError when the message and
        one of the replies do not fit in what is left of the context; CancelledError when
        interrupt() stopped it (Ctrl-C stops it too, and raises KeyboardInterrupt)."""
        # None stays None: NULL asks the library to score continuations.
        data = _options.text_arg("message", message)
        texts, encoded = _options.replies_arg(replies)
        n = len(encoded)
        # At least one element each: an empty list still passes valid pointers, and the
        # library, not ctypes, says that no replies is not a call it takes.
        array = (ctypes.c_char_p * max(n, 1))(*encoded)
        logprobs = (ctypes.c_double * max(n, 1))()
        n_tokens = (ctypes.c_uint32 * max(n, 1))()
        flags = _native.SCORE_WITH_END if with_end else 0
        self._raise_error(self._stoppable(lambda handle, _ask: self._outcome(
            self._lib.parley_session_score_replies(handle, data, array, n, flags, logprobs,
                                                   n_tokens))))
        return [ReplyScore(texts[i], logprobs[i], n_tokens[i]) for i in range(n)]

    def add_exchange(self, user_text, reply_text):
        """Adds a user message and a reply to it that the caller wrote, without generating,
        as if the model had replied so: a character's scripted lines, or a conversation
        carried over from elsewhere. Both are turns (rewind(2) removes them). The reply is
        tokenized as plain text and left open; the next send closes it as the template
        closes a reply, and only computes its own message. With the "raw" template the
        reply continues the message, as a streamed raw reply reads: " there was" starts a
        word, ", and" joins the last one; "llama2" strips the reply, as its template does, and
        "chatml" and "zephyr" put it after "assistant\n" as is.
        Raises ContextFullError when the two do not fit; the session is then as before."""
        user = _options.text_arg("user_text", user_text, optional=False)
        reply = _options.text_arg("reply_text", reply_text, optional=False)
        with self._use() as handle:
            self._check(self._lib.parley_session_add_exchange(handle, user, reply))

    def interrupt(self):
        """Stops the running reply at its next token (it raises CancelledError and keeps the
        partial reply as the turn), a running prepare() (it raises CancelledError and keeps
        what it computed) or score_replies() (it raises CancelledError). Any thread, any time;
        a no-op when nothing runs, also once the session is closed (close() stops what ran)."""
        # Under the lock: close() does not free the handle between the check and the call.
        with self._close_lock:
            handle = self._handle
            status = self._lib.parley_session_interrupt(handle) if handle is not None else 0
            message = last_error() if status else ""
        if status:
            raise self._error(status, message)

    def _interrupt_quietly(self):
        # Stopping a call whose caller has an exception to raise: the call's end tells the
        # rest, and a failure here must not take that exception's place.
        try:
            self.interrupt()
        except ParleyError:
            pass

    def _stop(self, handle):
        # close() while a call runs: the reply stops as interrupted, and the call, as it
        # returns, frees the session.
        self._lib.parley_session_interrupt(handle)

    # ---- Conversation -----------------------------------------------------------------------

    def fork(self, id=None):
        """A copy of this conversation that then goes its own way (shares KV copy-on-write)."""
        new_id = _options.text_arg("id", id)
        out = _native.session_p()
        with self._use() as handle:
            self._check(self._lib.parley_session_fork(handle, new_id, ctypes.byref(out)))
            # In the block: a Ctrl-C is raised once the new handle has an owner to free it.
            return Session(self._lib, out.value)

    def export(self):
        """The conversation as portable JSON (a str): its id, template, system prompt, cache
        scope, overflow policy, model fingerprint, start time and messages, each with its
        text and token ids. Engine.import_session() makes a session of it again, in this
        engine or another (a save file, a conversation carried to another store, machine or
        model). The KV is not in it."""
        with self._use() as handle:
            return read_text(lambda buf, cap, needed:
                             self._lib.parley_session_export(handle, buf, cap, needed),
                             self._check)

    def rewind(self, n):
        """Drops the last n messages (a user message and its reply are two)."""
        n = _options.int_arg("n", n, ctypes.c_uint32)
        with self._use() as handle:
            self._check(self._lib.parley_session_rewind(handle, n))

    def set_system_prompt(self, text):
        """Lets the conversation go on under a new system prompt: a character whose situation
        changed ("The player has stolen your sword."), a tone to change. Every message is
        kept; the next reply reads them after the new prompt, as if it had been there from
        the start. The system turn (turns[0]) is changed, added when there was none, or
        removed by None or "", so the other turns' indices move by one when it comes or goes.
        With a store the change is committed before this returns; a reopened session has it.
        The conversation's KV is computed again by the next turn (or ahead of it by
        prepare()); setting the prompt the session already has costs nothing.
        Raises ContextFullError when the conversation with this prompt would not fit the
        context with room for a reply; the session is then as before."""
        data = _options.text_arg("text", text)
        with self._use() as handle:
            self._check(self._lib.parley_session_set_system_prompt(handle, data))

    @property
    def overflow(self):
        """What a message that does not fit the context does: "error" (send raises
        ContextFullError and nothing changes) or "drop_oldest" (the oldest exchanges are
        dropped, the system prompt stays, and the conversation is rebuilt; as many as the
        reply's max_tokens need too, when dropping can make that room). Engine.session(
        overflow=...) sets it; the store keeps it, so a reopened session has it.
        Setting it (the same names) drops nothing now: the next message that does not fit
        decides. With a store the change is committed before this returns. Raises
        InvalidArgumentError for another name, as Engine.session does; StorageError when the
        store refused it (nothing changed; also when another engine on the same store deleted
        the conversation, or deleted it and started another under its id; turns it added do
        not matter to the policy)."""
        return self.info.overflow

    @overflow.setter
    def overflow(self, policy):
        value = _options.choice_arg("overflow", policy, _options.OVERFLOW_POLICIES)
        with self._use() as handle:
            self._check(self._lib.parley_session_set_overflow(handle, value))

    def suspend(self):
        """Moves the KV to the store and frees its memory; the next send brings it back.
        Its full blocks stay cached until the KV budget needs them (engine stats'
        kv_blocks_cached), and the next send takes those it still finds there."""
        with self._use() as handle:
            self._check(self._lib.parley_session_suspend(handle))

    @property
    def info(self):
        s = _native.sized(_native.SessionInfo)
        with self._use() as handle:
            self._check(self._lib.parley_session_get_info(handle, ctypes.byref(s)))
        return SessionInfo.from_struct(s)

    @property
    def id(self):
        self._live()
        return self._id

    @property
    def turns(self):
        """The messages as (role, text): role is "system", "user" or "assistant"."""
        result = []
        turn = _native.sized(_native.Turn)
        with self._use() as handle:
            for index in range(self.info.n_turns):
                self._check(self._lib.parley_session_get_turn(handle, index, ctypes.byref(turn)))
                # Copied at once: the library's text lives only until the next call.
                result.append((ROLES.get(turn.role, str(turn.role)),
                               (turn.text or b"").decode("utf-8", errors="replace")))
        return result

    @property
    def tokens(self):
        """The token ids of the whole conversation."""
        with self._use() as handle:
            return read_ids(lambda ids, cap, needed:
                            self._lib.parley_session_get_tokens(handle, ids, cap, needed),
                            self._check)

    @property
    def end_ids(self):
        """The ids whose sampling ends this session's replies, ascending: the model's EOS and
        other end ids, the template's end of turn where the vocabulary has it, BOS with "raw".
        Ban them all (`logit_bias={i: float("-inf") for i in s.end_ids}`) for a reply that
        must run to max_tokens. A tuple: they depend only on the model and the template."""
        with self._use() as handle:
            return tuple(read_ids(lambda ids, cap, needed:
                                  self._lib.parley_session_get_end_ids(handle, ids, cap, needed),
                                  self._check))
