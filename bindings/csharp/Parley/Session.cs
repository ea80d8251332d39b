// One conversation (parley_session). Use it from one thread at a time: a second concurrent
// call fails with ParleyStatus.Busy. Only Interrupt() and Dispose() may be called from any
// thread at any time.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Parley
{
    public sealed class Session : IDisposable
    {
        private readonly SessionHandle _handle;
        private readonly string _id;
        private volatile bool _disposed;
        // The enumerated streams whose reply runs (see StreamPieces); under its own lock.
        private readonly List<StreamWorker> _streams = new List<StreamWorker>();

        internal Session(SessionHandle handle)
        {
            _handle = handle;
            try
            {
                // An id never changes: read once, so that Id works while a reply runs (Info
                // is then Busy).
                _id = Info.Id;
            }
            catch
            {
                handle.Dispose();
                throw;
            }
        }

        // Figures of the last turn a Send or Continue kept: a finished one, or one kept by the
        // error it failed with (ParleyException.Reply then holds its reply); null before the
        // first. Errors that keep no turn leave it as it was.
        public TurnStats LastStats { get; private set; }

        // The session's id; readable while a reply runs, unlike Info.
        public string Id
        {
            get
            {
                if (_disposed || _handle.IsClosed) throw new ObjectDisposedException("Session");
                return _id;
            }
        }

        // Adds a user message and returns the whole reply. A ParleyException whose Reply is
        // not null kept the turn: Cancelled (Interrupt, or Dispose from another thread,
        // stopped the reply), OutOfMemory when the KV budget ran out during the reply (it ends
        // there) or storing the finished turn failed, and Storage (the store did not take the
        // turn: it is kept in memory and stored with the next one; or another engine on the
        // same store file changed the conversation, whose turns then stay in memory only);
        // LastStats then describes the turn. Other failures, OutOfMemory before the reply
        // among them, keep nothing (Reply null) and leave LastStats as it was.
        public string Send(string text, GenerateOptions options = null)
        {
            return SendCore(text, options, null);
        }

        // Adds a user message and hands the reply to `onText` piece by piece (whole UTF-8 code
        // points), on this thread, as it is generated; returns the whole reply. An exception
        // thrown by `onText` stops the reply (kept as the turn) and is rethrown here. Errors
        // are those of Send; a kept reply's Reply is the text `onText` received.
        public string Stream(string text, GenerateOptions options, Action<string> onText)
        {
            if (onText == null) throw new ArgumentNullException("onText");
            return SendCore(text, options, piece => { onText(piece); return true; });
        }

        // Adds a user message and yields the reply piece by piece. The reply is generated on a
        // worker thread, which waits for the loop body before it goes on, as if the body were
        // Stream's handler: nothing is generated before the first MoveNext, and leaving the loop
        // early (break, an exception) stops the reply there, keeping as the turn what the loop
        // received (LastStats.StopReason Cancelled; no exception for it). Interrupt() or
        // Dispose() while the loop body runs stop the reply before another piece, and the
        // next MoveNext throws their ParleyException (Cancelled). A failure comes out of the
        // loop as from Send, with the kept reply as its Reply. Dispose the enumerator (foreach
        // does) or read it to its end: one left unfinished holds the session (Busy) until then,
        // or until the collector finalizes it once dropped. Each call sends its message once,
        // so the result is enumerated once: a second GetEnumerator (a foreach after LINQ's
        // Any(), a second ToList()) throws InvalidOperationException and sends nothing; call
        // Stream again for another reply.
        public IEnumerable<string> Stream(string text, GenerateOptions options = null)
        {
            if (text == null) throw new ArgumentNullException("text");
            if (_handle.IsClosed) throw new ObjectDisposedException("Session");
            // Bad arguments are refused here, at the call, as by Send; not at the first MoveNext.
            Utf8.ToNative(text, "text");
            CheckOptions(options);
            return StreamPieces(onPiece => SendCore(text, options, onPiece));
        }

        // Generates without a new user message and returns the text this call generated
        // (ReplyPrefix included); `onText`, when given, receives it piece by piece as Stream's
        // handler does. What it generates depends on how the conversation ends:
        // - a user message without its reply (Rewind(1) dropped it): the reply to it. With the
        //   same options and Seed it is the reply the dropped one was; with another Seed,
        //   another take on it.
        // - a reply left open (it stopped at MaxTokens, before a stop string, at the end of the
        //   context, when interrupted, or was written with AddExchange): more of it. The new
        //   text is appended to that reply, which stays one turn; greedy continuation of a
        //   reply cut at MaxTokens gives what one longer reply would have.
        // MaxTokens and Stop apply to the new text. ReplyPrefix starts a reply that has no text
        // yet, and (since 0.6) steers one under way: the reply goes on with it, and the model
        // from there (" and then the dragon" starts a word, "," joins the last one). LastStats
        // cover this call (PromptTokens 0). ParleyStatus.InvalidArgument when there is no user
        // message yet or when the model ended the last reply (send a message or rewind it).
        // Errors that keep what was generated (Cancelled, OutOfMemory, Storage) are those of
        // Send: their Reply is the text this call added to the reply, as it is kept.
        public string Continue(GenerateOptions options = null, Action<string> onText = null)
        {
            Func<string, bool> onPiece = null;
            if (onText != null) onPiece = piece => { onText(piece); return true; };
            return Generate(null, options, onPiece);
        }

        // Generates without a new user message, as Continue does, and yields the text this call
        // generates piece by piece, as the enumerated Stream does: nothing is generated before
        // the first MoveNext, which fails as Continue would (ParleyStatus.InvalidArgument when
        // there is nothing to continue), and leaving the loop early stops the reply, keeping
        // what the loop received. A failure comes out of the loop as from Continue. The result
        // is enumerated once, as Stream's.
        public IEnumerable<string> StreamContinue(GenerateOptions options = null)
        {
            if (_handle.IsClosed) throw new ObjectDisposedException("Session");
            CheckOptions(options);  // at the call, as Stream's arguments
            return StreamPieces(onPiece => Generate(null, options, onPiece));
        }

        // Does now the work the next Send or Continue would begin with, so that its first
        // token comes sooner: call it while a level or a window loads, or on a thread of your
        // own, then send when the user speaks. KV in the store (a reopened, suspended or
        // spilled session) comes back; tokens without KV are computed, all but the last; a
        // conversation with no message yet computes its opening (the system prompt and the
        // template's markers) in whole blocks of 16 tokens and holds it for its first turn.
        // Calling it again when nothing is left costs nothing, and replies are the same with
        // or without it. Returns the stats of this work: ReusedTokens, ComputedTokens,
        // RestoreMs and KvSource (Restored or Rebuilt when the KV came from the store); the
        // other counts are 0, StopReason None, StopIndex -1. LastStats is unchanged.
        // ParleyStatus.Cancelled when Interrupt() stopped it (what was computed is kept).
        public TurnStats Prepare()
        {
            var stats = new NativeTurnStats { struct_size = SizeOf<NativeTurnStats>.Value };
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_prepare(Handle, ref stats));
            return new TurnStats(stats);
        }

        // Measures a message before it is sent: the tokens Send(text) would add before its
        // reply, and the context then left for the reply (0: it does not fit; Send then fails
        // with ParleyStatus.ContextFull, or with OverflowPolicy.DropOldest drops the oldest
        // exchanges). Nothing is computed and the session is unchanged. The text is taken as
        // Send takes it.
        public TokenCount CountTokens(string text)
        {
            byte[] utf8 = Utf8.ToNative(text, "text");
            if (utf8 == null) throw new ArgumentNullException("text");
            uint promptTokens, contextLeft;
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_count_tokens(
                Handle, utf8, out promptTokens, out contextLeft));
            return new TokenCount(promptTokens, contextLeft);
        }

        // How likely the model finds each of several replies to a message, without generating
        // and without changing the conversation: for each reply, in the order of `replies`, the
        // natural log of the probability that the model, after the conversation so far and
        // `message`, replies with exactly that text (the sum over its tokens, at temperature 1:
        // no sampling options apply) and the number of tokens scored. The most likely reply is
        // the model's pick among a character's possible lines or actions, or the label it
        // gives a message. A longer reply has more tokens to pay for; LogProb / TokenCount
        // compares replies per token. `withEnd` scores the end of each reply too, so that
        // "Yes" is not also counted as the start of "Yes, but": the chance that the reply ends
        // there as a generated one would, at any token that ends it (the template's end of
        // reply, EOS, the model's other end ids, with "raw" BOS), their probabilities added
        // (since 0.8.5; see parley_session_score_replies in parley.h for before). The message
        // is taken as Send takes it, each reply as AddExchange takes it ("" is 0 tokens,
        // LogProb 0 unless the end is scored). A null `message` (since 0.6) adds no message:
        // each reply is scored as what Continue would generate, the missing reply to the last
        // user message (after Rewind(1)) or more of the open last reply (" and" then starts a
        // word, "," joins the last one); which ending the model finds likeliest for a line it
        // began.
        // ParleyStatus.InvalidArgument for no replies or more than 256, or for a null message
        // with nothing to go on from (as Continue); ContextFull when the message and one of
        // the replies do not fit in what is left of the context; Cancelled when Interrupt()
        // stopped it.
        public ReplyScore[] ScoreReplies(string message, IList<string> replies,
                                         bool withEnd = false)
        {
            // null stays null: a NULL message asks the library to score continuations.
            byte[] utf8 = Utf8.ToNative(message, "message");
            if (replies == null) throw new ArgumentNullException("replies");
            // Copied first: the count and the pointers then agree whatever replies.Count says.
            var texts = new List<string>(replies);
            int n = texts.Count;
            // At least one element each: with no replies the library, not the marshaller, says
            // what is wrong.
            var pointers = new IntPtr[Math.Max(n, 1)];
            var logprobs = new double[pointers.Length];
            var tokens = new uint[pointers.Length];
            using (var strings = new NativeStrings())
            {
                for (int i = 0; i < n; i++)
                {
                    // C would take a NULL for a missing string, as for stop strings.
                    if (texts[i] == null)
                        throw new ArgumentException("element " + i + " is null", "replies");
                    pointers[i] = strings.Add(texts[i], "replies");
                }
                ParleyException.ThrowIfFailed(NativeMethods.parley_session_score_replies(
                    Handle, utf8, pointers, new UIntPtr((uint)n),
                    withEnd ? NativeMethods.ScoreWithEnd : 0u, logprobs, tokens));
            }
            var scores = new ReplyScore[n];
            for (int i = 0; i < n; i++)
                scores[i] = new ReplyScore(texts[i], logprobs[i], tokens[i]);
            return scores;
        }

        // Adds a user message and a reply to it that the caller wrote, without generating, as
        // if the model had replied so: a character's scripted lines, or a conversation carried
        // over from elsewhere. Both are turns (Rewind(2) removes them). The reply is tokenized
        // as plain text and left open; the next send closes it as the template closes a reply,
        // and only computes its own message. With the "raw" template the reply continues the
        // message, as a streamed raw reply reads: " there was" starts a word, ", and" joins the
        // last one; "llama2" strips the reply, as its template does, and "chatml" and "zephyr"
        // put it after "assistant\n" as is. ParleyStatus.ContextFull when the two do not fit;
        // the session is then as before.
        public void AddExchange(string userText, string replyText)
        {
            byte[] user = Utf8.ToNative(userText, "userText");
            if (user == null) throw new ArgumentNullException("userText");
            byte[] reply = Utf8.ToNative(replyText, "replyText");
            if (reply == null) throw new ArgumentNullException("replyText");
            ParleyException.ThrowIfFailed(
                NativeMethods.parley_session_add_exchange(Handle, user, reply));
        }

        // Asks a running send to stop at the next token; it then fails with
        // ParleyStatus.Cancelled, keeping the partial reply as the turn. A running Prepare
        // fails so too, keeping what it computed, and so does a running ScoreReplies. An
        // enumerated stream's reply stops without another piece. Any thread, any time while
        // the session is open (ObjectDisposedException after Dispose); a no-op when nothing
        // runs.
        public void Interrupt()
        {
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_interrupt(Handle));
            StopStreams();
        }

        // A copy of the conversation that then goes its own way (shares KV copy-on-write).
        public Session Fork(string newId = null)
        {
            SessionHandle fork;
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_fork(
                Handle, Utf8.ToNative(newId, "newId"), out fork));
            return new Session(fork);
        }

        // The conversation as portable JSON: its id, template, system prompt, cache scope,
        // overflow policy, model fingerprint, start time and messages, each with its text and
        // token ids. Engine.ImportSession makes a session of it again, in this engine or
        // another (a save file, a conversation carried to another store, machine or model).
        // The KV is not in it.
        public string Export()
        {
            UIntPtr needed;
            ParleyException.ThrowIfFailed(
                NativeMethods.parley_session_export(Handle, null, UIntPtr.Zero, out needed));
            for (;;)
            {
                byte[] buf = new byte[checked((int)needed.ToUInt64())];
                ParleyException.ThrowIfFailed(NativeMethods.parley_session_export(
                    Handle, buf, new UIntPtr((uint)buf.Length), out needed));
                // A turn added between the two calls makes it longer: ask again.
                if ((long)needed.ToUInt64() <= buf.Length) return Utf8.FromBuffer(buf);
            }
        }

        // Drops the last `turns` messages (a user message and its reply are two).
        public void Rewind(int turns)
        {
            if (turns < 0) throw new ArgumentOutOfRangeException("turns");
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_rewind(Handle, (uint)turns));
        }

        // Lets the conversation go on under a new system prompt: a character whose situation
        // changed ("The player has stolen your sword."), a tone to change. Every message is
        // kept; the next reply reads them after the new prompt, as if it had been there from
        // the start. The system turn (Turns[0]) is changed, added when there was none, or
        // removed by null or "", so the other turns' indices move by one when it comes or
        // goes. With a store the change is committed before this returns; a reopened session
        // has it. The conversation's KV is computed again by the next turn (or ahead of it by
        // Prepare); setting the prompt the session already has costs nothing.
        // ParleyStatus.ContextFull when the conversation with this prompt would not fit the
        // context with room for a reply; the session is then as before.
        public void SetSystemPrompt(string systemPrompt)
        {
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_set_system_prompt(
                Handle, Utf8.ToNative(systemPrompt, "systemPrompt")));
        }

        // What a message that does not fit the context does: Error (the send fails with
        // ParleyStatus.ContextFull and nothing changes) or DropOldest (the oldest exchanges are
        // dropped, the system prompt stays, and the conversation is rebuilt).
        // SessionOptions.Overflow sets it; the store keeps it, so a reopened session has it.
        // Setting it drops nothing now: the next message that does not fit decides. With a
        // store the change is committed before the setter returns. ParleyStatus.InvalidArgument
        // for a value that is no OverflowPolicy, as at creation; Storage when the store refused
        // it (nothing changed; also when another engine on the same store deleted the
        // conversation, or deleted it and started another under its id; turns it added do not
        // matter to the policy). Since 0.8. Reading it asks the session, as Info does: Busy
        // while a call on it runs (a reply, also from its own handler or stream loop).
        public OverflowPolicy Overflow
        {
            get { return Info.Overflow; }
            set
            {
                ParleyException.ThrowIfFailed(
                    NativeMethods.parley_session_set_overflow(Handle, (int)value));
            }
        }

        // Moves the KV to the store and frees its memory; the next send brings it back. Its full
        // blocks stay cached until the KV budget needs them (EngineStats' KvBlocksCached), and
        // the next send takes those it still finds there.
        public void Suspend()
        {
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_suspend(Handle));
        }

        public SessionInfo Info
        {
            get
            {
                var info = new NativeSessionInfo
                {
                    struct_size = SizeOf<NativeSessionInfo>.Value,
                    id = new byte[128],
                    chat_template = new byte[32],
                };
                ParleyException.ThrowIfFailed(NativeMethods.parley_session_get_info(Handle, ref info));
                return new SessionInfo(info);
            }
        }

        // The messages of the conversation; the first is the system prompt when there is one.
        public IList<Turn> Turns
        {
            get
            {
                int count = Info.Turns;
                var turns = new List<Turn>(count);
                for (int i = 0; i < count; i++)
                {
                    var t = new NativeTurn { struct_size = SizeOf<NativeTurn>.Value };
                    ParleyException.ThrowIfFailed(
                        NativeMethods.parley_session_get_turn(Handle, (uint)i, ref t));
                    // t.text lives only until the next call on this session: copy it now.
                    turns.Add(new Turn((Role)t.role, Utf8.FromNative(t.text), (int)t.n_tokens));
                }
                return turns;
            }
        }

        // The token ids of the whole conversation, in order.
        public int[] Tokens
        {
            get
            {
                int[] ids = new int[0];
                for (;;)
                {
                    UIntPtr needed;
                    ParleyException.ThrowIfFailed(NativeMethods.parley_session_get_tokens(
                        Handle, ids, new UIntPtr((uint)ids.Length), out needed));
                    int n = checked((int)needed.ToUInt64());
                    if (n <= ids.Length) return ids;
                    ids = new int[n];
                }
            }
        }

        // The ids whose sampling ends this session's replies, ascending: the model's EOS and
        // other end ids, the template's end of turn where the vocabulary has it, BOS with
        // "raw". Ban them all (float.NegativeInfinity in GenerateOptions.LogitBias) for a reply
        // that must run to MaxTokens. A fresh array each time; the ids depend only on the model
        // and the template.
        public int[] EndIds
        {
            get
            {
                UIntPtr count;
                ParleyException.ThrowIfFailed(NativeMethods.parley_session_get_end_ids(
                    Handle, null, UIntPtr.Zero, out count));
                var ids = new int[checked((int)count.ToUInt64())];
                ParleyException.ThrowIfFailed(NativeMethods.parley_session_get_end_ids(
                    Handle, ids, new UIntPtr((uint)ids.Length), out count));
                return ids;
            }
        }

        // Closes the session; with a store its KV is spilled first, so reopening it is instant.
        // A call running on another thread (or whose handler calls this) that Interrupt stops
        // is stopped so: a Send, Continue or stream fails with ParleyStatus.Cancelled, its
        // partial reply kept as the turn and carried as the exception's Reply (Prepare and
        // ScoreReplies fail with Cancelled too), and the session is closed when that call
        // returns. An enumerated stream's reply is stopped so too, and Dispose waits until it
        // has ended: its partial reply is then kept as the turn (committed to the store, with
        // one), also when the loop is left paused for good or the process exits right after.
        // Disposing twice is a no-op.
        public void Dispose()
        {
            // A call in flight holds the handle, which closes only once that call returns: stop
            // a running reply first. The flag stops one the interrupt came too early for, at
            // its first piece.
            _disposed = true;
            try
            {
                NativeMethods.parley_session_interrupt(_handle);
            }
            catch (ObjectDisposedException)
            {
                // Disposed already.
            }
            // A stream's reply paused for its loop body would otherwise hold the handle until
            // the loop goes on, or for good when it never does. Its worker is a background
            // thread, which the process would not wait for at exit: the turn it still keeps
            // (stores) would be lost.
            WaitForThreads(StopStreams());
            _handle.Dispose();
        }

        internal bool Disposed { get { return _disposed; } }

        private SessionHandle Handle
        {
            get
            {
                // The flag, as the handle stays open while a call in flight holds it.
                if (_disposed || _handle.IsClosed) throw new ObjectDisposedException("Session");
                return _handle;
            }
        }

        // Throws what converting `options` for the library would (a negative count, a NUL
        // character in a stop string or the reply prefix); the library judges the rest.
        private static void CheckOptions(GenerateOptions options)
        {
            using (var strings = new NativeStrings()) GenerateOptions.ToNative(options, strings);
        }

        private string SendCore(string text, GenerateOptions options, Func<string, bool> onPiece)
        {
            byte[] utf8 = Utf8.ToNative(text, "text");
            if (utf8 == null) throw new ArgumentNullException("text");
            return Generate(utf8, options, onPiece);
        }

        // A user message and its reply (parley_session_send), or without one (userText null)
        // what parley_session_continue generates.
        private string Generate(byte[] userText, GenerateOptions options,
                                Func<string, bool> onPiece)
        {
            using (var strings = new NativeStrings())
            {
                NativeGenerateOptions o = GenerateOptions.ToNative(options, strings);
                return GenerateNative(userText, ref o, onPiece);
            }
        }

        private string GenerateNative(byte[] userText, ref NativeGenerateOptions o,
                                      Func<string, bool> onPiece)
        {
            // The library fills stats only when it keeps the turn, OK or not (an OutOfMemory
            // may or may not keep it), and always writes a kv_source >= 0: -1 left means unkept.
            var stats = new NativeTurnStats
            {
                struct_size = SizeOf<NativeTurnStats>.Value,
                kv_source = -1,
            };
            var sink = new TextSink(onPiece, this);
            GCHandle pin = GCHandle.Alloc(sink);
            try
            {
                IntPtr user = GCHandle.ToIntPtr(pin);
                int status = userText == null
                    ? NativeMethods.parley_session_continue(
                        Handle, ref o, TextSink.Trampoline, user, ref stats)
                    : NativeMethods.parley_session_send(
                        Handle, userText, ref o, TextSink.Trampoline, user, ref stats);
                // Read this thread's message before anything else can replace it.
                ParleyException failure = status != 0 ? ParleyException.FromLastError(status) : null;
                bool kept = stats.kv_source >= 0;
                if (kept) LastStats = new TurnStats(stats);
                if (sink.HandlerError != null) ExceptionDispatchInfo.Capture(sink.HandlerError).Throw();
                if (failure != null)
                {
                    if (kept) failure.Reply = sink.Reply;
                    throw failure;
                }
                return sink.Reply;
            }
            finally
            {
                pin.Free();
            }
        }

        // Runs `generate` (a send or a continue, handed the piece handler) on a worker thread
        // and yields its pieces. The handler hands each piece over and waits until the caller
        // asks for the next one, so the reply is paused while the loop body runs, as if the
        // body were the handler: leaving the loop makes the waiting handler stop the reply at
        // the piece the caller saw, and no piece is generated that the caller will not see.
        private IEnumerable<string> StreamPieces(Func<Func<string, bool>, string> generate)
        {
            return new SingleUse(PiecesOf(generate));
        }

        private IEnumerable<string> PiecesOf(Func<Func<string, bool>, string> generate)
        {
            var stream = new StreamWorker(this, generate);
            // Only this enumerator holds it: dropped half-read, it stops the paused reply.
            var guard = new StreamGuard(stream);
            try
            {
                stream.Start();
                string piece;
                while (stream.Next(out piece)) yield return piece;
            }
            finally
            {
                guard.Disarm();
                // Left early (or the reply ended): a waiting handler stops the reply there.
                stream.Finish();
            }
            stream.ThrowFailure();
        }

        // Stops the reply of every enumerated stream of this session (StreamPieces) and returns
        // their worker threads. Stopped under the lock, as a worker leaves the list before its
        // hand-over is disposed.
        private List<Thread> StopStreams()
        {
            var threads = new List<Thread>();
            lock (_streams)
            {
                foreach (StreamWorker stream in _streams)
                {
                    stream.Stop();
                    threads.Add(stream.Thread);
                }
            }
            return threads;
        }

        // Waits outside the lock, which an ending worker takes. A stopped worker ends without
        // anyone's help: it runs no user code (but the log handler, which must not wait for
        // other threads) and its reply no longer waits for a loop, so this cannot deadlock
        // whichever thread disposes (the loop's own among them).
        private static void WaitForThreads(List<Thread> threads)
        {
            foreach (Thread thread in threads)
            {
                if (thread != Thread.CurrentThread) thread.Join();
            }
        }

        // The worker thread of an enumerated stream and the hand-over of its pieces. Kept apart
        // from the iterator, so that the thread never holds the enumerator: see StreamGuard.
        private sealed class StreamWorker
        {
            private readonly Session _session;
            private readonly Func<Func<string, bool>, string> _generate;
            private readonly BlockingCollection<string> _pieces =
                new BlockingCollection<string>();    // worker -> caller, then completed
            private readonly BlockingCollection<bool> _answers =
                new BlockingCollection<bool>();      // caller -> handler: next, or stop
            private Thread _thread;
            private int _stopped;
            private bool _answerDue;                 // the caller holds a piece
            private Exception _failure;

            internal StreamWorker(Session session, Func<Func<string, bool>, string> generate)
            {
                _session = session;
                _generate = generate;
            }

            // Started under the lock, so that Dispose finds every listed worker's thread
            // started and may join it.
            internal void Start()
            {
                lock (_session._streams)
                {
                    _thread = new Thread(Run);
                    _thread.IsBackground = true;
                    _thread.Name = "Parley.Session.Stream";
                    _thread.Start();
                    _session._streams.Add(this);
                }
            }

            internal Thread Thread { get { return _thread; } }

            private void Run()
            {
                try
                {
                    _generate(OnPiece);
                }
                catch (Exception e)
                {
                    _failure = e;
                }
                finally
                {
                    lock (_session._streams) _session._streams.Remove(this);
                    _pieces.CompleteAdding();
                }
            }

            private bool OnPiece(string piece)
            {
                // A piece after a stop (the library may deliver one) is not handed over: nobody
                // would answer it.
                if (Volatile.Read(ref _stopped) != 0) return false;
                _pieces.Add(piece);
                return _answers.Take() && Volatile.Read(ref _stopped) == 0;
            }

            // Lets the reply go on from the piece the caller holds, and waits for the next one;
            // false when the reply is over.
            internal bool Next(out string piece)
            {
                if (_answerDue) _answers.Add(true);
                _answerDue = _pieces.TryTake(out piece, Timeout.Infinite);
                return _answerDue;
            }

            // Stops the reply at the handler's next call, or now when it waits: the caller left
            // the loop, Interrupt, Dispose (any thread). An answer left unread is harmless.
            internal void Stop()
            {
                Volatile.Write(ref _stopped, 1);
                _answers.Add(false);
            }

            internal void Finish()
            {
                Stop();
                if (_thread != null && _thread.IsAlive) _thread.Join();
                // Gone from the list once the thread has ended; also when it never started.
                lock (_session._streams) _session._streams.Remove(this);
                _pieces.Dispose();
                _answers.Dispose();
            }

            internal void ThrowFailure()
            {
                if (_failure != null) ExceptionDispatchInfo.Capture(_failure).Throw();
            }
        }

        // The pieces of one Stream or StreamContinue call, enumerated once: enumerating again
        // would send the message (or continue the reply) again.
        private sealed class SingleUse : IEnumerable<string>
        {
            private readonly IEnumerable<string> _pieces;
            private int _enumerated;

            internal SingleUse(IEnumerable<string> pieces) { _pieces = pieces; }

            public IEnumerator<string> GetEnumerator()
            {
                if (Interlocked.Exchange(ref _enumerated, 1) != 0)
                    throw new InvalidOperationException("this stream was enumerated already; "
                        + "each Stream or StreamContinue call generates one reply: call it again");
                return _pieces.GetEnumerator();
            }

            System.Collections.IEnumerator System.Collections.IEnumerable.GetEnumerator()
            {
                return GetEnumerator();
            }
        }

        // Stops the reply of a stream whose enumerator was dropped half-read, neither finished
        // nor disposed: its handler would otherwise wait for good, holding the session (Busy,
        // never closed). The worker thread does not reach this object, so it is collected with
        // the enumerator.
        private sealed class StreamGuard
        {
            private StreamWorker _stream;

            internal StreamGuard(StreamWorker stream) { _stream = stream; }

            internal void Disarm()
            {
                _stream = null;
                GC.SuppressFinalize(this);
            }

            ~StreamGuard()
            {
                StreamWorker stream = _stream;
                // At exit the runtime finalizes streams still referenced, whose worker it has
                // suspended, holding the lock Stop() needs: the process ends the reply anyway.
                if (stream == null || Environment.HasShutdownStarted) return;
                try
                {
                    stream.Stop();
                }
                catch (ObjectDisposedException)
                {
                    // Finished meanwhile.
                }
            }
        }
    }
}
