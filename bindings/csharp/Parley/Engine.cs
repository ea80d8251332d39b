// A loaded model with its backend and its sessions (parley_engine). Thread-safe: any thread
// may use it. Dispose closes it; sessions still open stay usable, and the native engine is
// freed when the last of them closes.
using System;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;

namespace Parley
{
    public sealed class Engine : IDisposable
    {
        private readonly EngineHandle _handle;

        // Loads a model: a GGUF file or a Hugging Face model directory. LibraryVersionException
        // when the native library is a version this binding cannot use; ParleyStatus.Cancelled
        // when EngineOptions.LoadProgress stopped the load, and what it threw when it threw.
        public Engine(string modelPath, EngineOptions options = null)
        {
            if (modelPath == null) throw new ArgumentNullException("modelPath");
            Library.EnsureCompatible();
            options = options ?? new EngineOptions();
            using (var strings = new NativeStrings())
            {
                NativeEngineOptions o = options.ToNative(modelPath, strings);
                LoadProgressSink sink = null;
                GCHandle pin = default(GCHandle);
                try
                {
                    if (options.LoadProgress != null)
                    {
                        sink = new LoadProgressSink(options.LoadProgress);
                        pin = GCHandle.Alloc(sink);
                        o.on_load_progress = LoadProgressSink.Trampoline;
                        o.load_progress_user = GCHandle.ToIntPtr(pin);
                    }
                    int status = NativeMethods.parley_engine_open(ref o, out _handle);
                    if (sink != null && sink.HandlerError != null)
                        ExceptionDispatchInfo.Capture(sink.HandlerError).Throw();
                    ParleyException.ThrowIfFailed(status);
                }
                finally
                {
                    if (pin.IsAllocated) pin.Free();
                }
            }
        }

        // Starts a new conversation.
        public Session CreateSession(SessionOptions options = null)
        {
            SessionHandle session;
            using (var strings = new NativeStrings())
            {
                NativeSessionOptions o = SessionOptions.ToNative(options, strings);
                ParleyException.ThrowIfFailed(
                    NativeMethods.parley_session_create(Handle, ref o, out session));
            }
            return new Session(session);
        }

        // Reopens a stored conversation (also one stored by an earlier process), with the
        // overflow policy and template it was stored with. ParleyStatus.InvalidArgument for an
        // empty id or a session already open; NotFound without a store or when no such
        // conversation is stored; ContextFull (since 0.8; Corrupt before) when the conversation
        // is longer than this engine's ContextLength: an engine whose context holds it opens
        // it, and nothing is changed; Corrupt when its transcript cannot be read; Storage when
        // the store fails.
        public Session OpenSession(string id)
        {
            byte[] utf8 = Utf8.ToNative(id, "id");
            if (utf8 == null) throw new ArgumentNullException("id");
            SessionHandle session;
            ParleyException.ThrowIfFailed(
                NativeMethods.parley_session_open(Handle, utf8, out session));
            return new Session(session);
        }

        // A session of a conversation Session.Export() wrote (here, in an earlier run, on
        // another machine), or JSON of that shape written elsewhere. id: the new session's id,
        // or null to keep the conversation's (one is generated when it has none). When every
        // message has its tokens and the JSON is of this engine's model, the ids are kept as
        // they were and the next send (or Prepare) computes their KV (the texts are not checked
        // against them: to edit a message's text, drop its "tokens", and the conversation is
        // taken from its texts); otherwise each user message and the reply after it are added
        // as AddExchange adds them. With a store the session is stored as a new one.
        // ParleyStatus.InvalidArgument for JSON that is not such a conversation (the message
        // names the first wrong field), an unknown template, messages out of order, a token
        // outside this model's vocabulary, or an id that is "" or already used;
        // ParleyStatus.ContextFull when it does not fit the context.
        public Session ImportSession(string json, string id = null)
        {
            byte[] utf8 = Utf8.ToNative(json, "json");
            if (utf8 == null) throw new ArgumentNullException("json");
            SessionHandle session;
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_import(
                Handle, utf8, Utf8.ToNative(id, "id"), out session));
            return new Session(session);
        }

        // Deletes a stored conversation that is not open: its transcript and its KV.
        public void DeleteSession(string id)
        {
            byte[] utf8 = Utf8.ToNative(id, "id");
            if (utf8 == null) throw new ArgumentNullException("id");
            ParleyException.ThrowIfFailed(NativeMethods.parley_session_delete(Handle, utf8));
        }

        // Ids of the stored conversations, oldest first; empty without a store.
        public string[] Sessions
        {
            get
            {
                byte[] buf = new byte[256];
                for (;;)
                {
                    UIntPtr needed;
                    ParleyException.ThrowIfFailed(NativeMethods.parley_store_list_sessions(
                        Handle, buf, new UIntPtr((uint)buf.Length), out needed));
                    // Another thread may store a session between the two calls: ask again.
                    if ((long)needed.ToUInt64() <= buf.Length)
                    {
                        string all = Utf8.FromBuffer(buf);
                        return all.Length == 0 ? new string[0] : all.Split('\n');
                    }
                    buf = new byte[checked((int)needed.ToUInt64())];
                }
            }
        }

        // A stored conversation's dates, turns and stored KV, without opening it. NotFound
        // without a store or when no conversation of that id is stored.
        public StoredSessionInfo GetStoredSessionInfo(string id)
        {
            byte[] utf8 = Utf8.ToNative(id, "id");
            if (utf8 == null) throw new ArgumentNullException("id");
            var s = new NativeStoredSessionInfo
            {
                struct_size = SizeOf<NativeStoredSessionInfo>.Value
            };
            ParleyException.ThrowIfFailed(
                NativeMethods.parley_store_get_session_info(Handle, utf8, ref s));
            return new StoredSessionInfo(s);
        }

        public EngineStats Stats
        {
            get
            {
                var s = new NativeEngineStats { struct_size = SizeOf<NativeEngineStats>.Value };
                ParleyException.ThrowIfFailed(NativeMethods.parley_engine_get_stats(Handle, ref s));
                return new EngineStats(s);
            }
        }

        public ModelInfo ModelInfo
        {
            get
            {
                var m = new NativeModelInfo
                {
                    struct_size = SizeOf<NativeModelInfo>.Value,
                    name = new byte[128],
                    architecture = new byte[32],
                    chat_template = new byte[32],
                    backend = new byte[32],
                };
                ParleyException.ThrowIfFailed(NativeMethods.parley_engine_get_model_info(Handle, ref m));
                return new ModelInfo(m);
            }
        }

        // Text to token ids with the model's tokenizer; control tokens never come from text.
        public int[] Tokenize(string text, bool addBos = false)
        {
            byte[] utf8 = Utf8.ToNative(text, "text");
            if (utf8 == null) throw new ArgumentNullException("text");
            int[] ids = new int[Math.Max(16, text.Length + 1)];
            for (;;)
            {
                UIntPtr needed;
                ParleyException.ThrowIfFailed(NativeMethods.parley_tokenize(
                    Handle, utf8, addBos ? 1 : 0, ids, new UIntPtr((uint)ids.Length), out needed));
                int n = checked((int)needed.ToUInt64());
                if (n <= ids.Length)
                {
                    Array.Resize(ref ids, n);
                    return ids;
                }
                ids = new int[n];
            }
        }

        // Token ids to text.
        public string Detokenize(int[] ids)
        {
            if (ids == null) throw new ArgumentNullException("ids");
            UIntPtr n = new UIntPtr((uint)ids.Length);
            UIntPtr needed;
            ParleyException.ThrowIfFailed(
                NativeMethods.parley_detokenize(Handle, ids, n, null, UIntPtr.Zero, out needed));
            byte[] buf = new byte[checked((int)needed.ToUInt64())];
            ParleyException.ThrowIfFailed(NativeMethods.parley_detokenize(
                Handle, ids, n, buf, new UIntPtr((uint)buf.Length), out needed));
            return Utf8.FromBuffer(buf);
        }

        public void Dispose()
        {
            _handle.Dispose();
        }

        private EngineHandle Handle
        {
            get
            {
                if (_handle.IsClosed) throw new ObjectDisposedException("Engine");
                return _handle;
            }
        }
    }
}
