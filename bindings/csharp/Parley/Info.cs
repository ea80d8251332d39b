// Descriptions the library fills in: the loaded model, a session, a stored session, one
// message, what a message would take.
namespace Parley
{
    public sealed class ModelInfo
    {
        internal ModelInfo(NativeModelInfo m)
        {
            Name = Utf8.FromBuffer(m.name);
            Architecture = Utf8.FromBuffer(m.architecture);
            ChatTemplate = Utf8.FromBuffer(m.chat_template);
            VocabSize = (int)m.n_vocab;
            Layers = (int)m.n_layers;
            Heads = (int)m.n_heads;
            KvHeads = (int)m.n_kv_heads;
            HeadDim = (int)m.head_dim;
            EmbeddingLength = (int)m.embedding_length;
            ContextLength = (int)m.context_length;
            Parameters = (long)m.n_params;
            Backend = Utf8.FromBuffer(m.backend);
        }

        public string Name { get; private set; }
        public string Architecture { get; private set; }
        public string ChatTemplate { get; private set; }   // used when a session names none
        public int VocabSize { get; private set; }
        public int Layers { get; private set; }
        public int Heads { get; private set; }
        public int KvHeads { get; private set; }
        public int HeadDim { get; private set; }
        public int EmbeddingLength { get; private set; }
        public int ContextLength { get; private set; }     // the context in force
        public long Parameters { get; private set; }
        public string Backend { get; private set; }        // "cpu", "cuda:0", ...
    }

    public sealed class SessionInfo
    {
        internal SessionInfo(NativeSessionInfo s)
        {
            Id = Utf8.FromBuffer(s.id);
            Turns = (int)s.n_turns;
            Tokens = (int)s.n_tokens;
            State = (SessionState)s.state;
            Overflow = (OverflowPolicy)s.overflow;
            KvBytesResident = (long)s.kv_bytes_resident;
            KvBytesStored = (long)s.kv_bytes_stored;
            ChatTemplate = Utf8.FromBuffer(s.chat_template);
        }

        public string Id { get; private set; }
        public int Turns { get; private set; }     // messages: a user message and its reply are two
        public int Tokens { get; private set; }
        public SessionState State { get; private set; }
        // Since 0.8: what a message that does not fit does (Session.Overflow).
        public OverflowPolicy Overflow { get; private set; }
        public long KvBytesResident { get; private set; }
        public long KvBytesStored { get; private set; }
        // Since 0.8: the template the session uses, e.g. "chatml" (the model's when it named none).
        public string ChatTemplate { get; private set; }
    }

    // A stored conversation as the store has it, read without opening it (a "saved chats" list).
    public sealed class StoredSessionInfo
    {
        internal StoredSessionInfo(NativeStoredSessionInfo s)
        {
            CreatedUnixMs = s.created_unix_ms;
            UpdatedUnixMs = s.updated_unix_ms;
            Turns = (int)s.n_turns;
            IsOpen = s.is_open != 0;
            KvBytesStored = (long)s.kv_bytes_stored;
            SameModel = s.same_model != 0;
        }

        public long CreatedUnixMs { get; private set; }  // when it started, Unix milliseconds
        public long UpdatedUnixMs { get; private set; }  // when its last change was committed
        public int Turns { get; private set; }           // messages, the system prompt included
        // Open in this engine; the store may then lag a turn that failed to commit (Session.Info
        // has the session as it is).
        public bool IsOpen { get; private set; }
        public long KvBytesStored { get; private set; }  // 0: no stored KV
        // Its stored KV was computed by this engine's model and KV type: it can come back
        // instead of being recomputed (with no KV stored: started with this engine's model).
        public bool SameModel { get; private set; }
    }

    public sealed class Turn
    {
        internal Turn(Role role, string text, int tokens)
        {
            Role = role;
            Text = text;
            Tokens = tokens;
        }

        public Role Role { get; private set; }
        public string Text { get; private set; }
        public int Tokens { get; private set; }    // tokens this message took in the conversation
    }

    // What a message would take, measured before it is sent (Session.CountTokens).
    public sealed class TokenCount
    {
        internal TokenCount(uint promptTokens, uint contextLeft)
        {
            PromptTokens = (int)promptTokens;
            ContextLeft = (int)contextLeft;
        }

        // Tokens the send would add before its reply: the message with the template's markers
        // and what closes the previous reply (the send's LastStats.PromptTokens).
        public int PromptTokens { get; private set; }
        // Tokens of the context then left for the reply; 0: the message does not fit.
        public int ContextLeft { get; private set; }
    }

    // How likely the model finds one reply to a message (Session.ScoreReplies).
    public sealed class ReplyScore
    {
        internal ReplyScore(string text, double logProb, uint tokenCount)
        {
            Text = text;
            LogProb = logProb;
            TokenCount = (int)tokenCount;
        }

        // The reply as given.
        public string Text { get; private set; }
        // The natural log of the probability of exactly this reply, summed over its tokens
        // (<= 0).
        public double LogProb { get; private set; }
        // Tokens scored: the reply's, and its end's when the end was scored.
        public int TokenCount { get; private set; }
    }
}
