// Options of an engine, a session and a reply. Unset values mean the library's defaults, which
// are read from the library itself (parley_*_options_init_sized) rather than repeated here.
using System;
using System.Collections.Generic;

namespace Parley
{
    public sealed class EngineOptions
    {
        public string StorePath { get; set; }     // SQLite file holding the conversations; null = memory only
        public string Device { get; set; }        // null or "auto", "cpu", "cuda", "cuda:N"
        public KvType KvType { get; set; }
        public int Threads { get; set; }          // 0 = one per core
        public int ContextLength { get; set; }    // 0 = the model's
        public long KvBudgetBytes { get; set; }   // 0 = automatic
        public int IdleSpillMs { get; set; }      // with a store: spill sessions idle this long; 0 = under pressure only

        // Told how far the Engine constructor has come, for a loading screen or to give up a
        // long load: first 0, then fractions below 1 as the weights are converted and taken by
        // the backend, never lower than the one before, last exactly 1 once the engine is
        // ready, its store opened (only the last is 1). It runs on the thread constructing the
        // engine, inside that call: for a screen to redraw, construct the engine on another
        // thread and hand the fraction over (in Unity, to the main thread). Return true to go
        // on, false to stop: the constructor then throws ParleyException with Status
        // Cancelled, also when stopped at 1, and keeps nothing loaded. A load is given up with
        // a CancellationToken by `f => !token.IsCancellationRequested`. An exception it throws
        // stops the load too and comes out of the constructor as thrown. It may use other
        // engines and their sessions. null = no reports.
        public Func<float, bool> LoadProgress { get; set; }

        internal NativeEngineOptions ToNative(string modelPath, NativeStrings strings)
        {
            if (Threads < 0) throw new ArgumentOutOfRangeException("Threads");
            if (ContextLength < 0) throw new ArgumentOutOfRangeException("ContextLength");
            if (KvBudgetBytes < 0) throw new ArgumentOutOfRangeException("KvBudgetBytes");
            if (IdleSpillMs < 0) throw new ArgumentOutOfRangeException("IdleSpillMs");
            NativeEngineOptions o = NativeEngineOptions.Defaults();
            o.model_path = strings.Add(modelPath, "modelPath");
            o.store_path = strings.Add(StorePath, "StorePath");
            o.device = strings.Add(Device, "Device");
            o.kv_type = (int)KvType;
            o.n_threads = Threads;
            o.context_length = (uint)ContextLength;
            o.kv_budget_bytes = (ulong)KvBudgetBytes;
            o.idle_spill_ms = (uint)IdleSpillMs;
            return o;
        }
    }

    public sealed class SessionOptions
    {
        public string Id { get; set; }            // null = generate one; at most 127 bytes of UTF-8
        public string SystemPrompt { get; set; }
        public string ChatTemplate { get; set; }  // null = the model's; "raw", "llama2", "chatml", "zephyr", "mistral"
        public string CacheScope { get; set; }    // prefix KV is shared only within one scope
        public OverflowPolicy Overflow { get; set; }  // Session.Overflow tells it and changes it

        internal static NativeSessionOptions ToNative(SessionOptions options, NativeStrings strings)
        {
            NativeSessionOptions o = NativeSessionOptions.Defaults();
            if (options == null) return o;
            o.id = strings.Add(options.Id, "Id");
            o.system_prompt = strings.Add(options.SystemPrompt, "SystemPrompt");
            o.chat_template = strings.Add(options.ChatTemplate, "ChatTemplate");
            o.cache_scope = strings.Add(options.CacheScope, "CacheScope");
            o.overflow = (int)options.Overflow;
            return o;
        }
    }

    public sealed class GenerateOptions
    {
        // Starts from the library's defaults (sampling at temperature 0.8, 256 tokens at most).
        public GenerateOptions()
        {
            NativeGenerateOptions d = NativeGenerateOptions.Defaults();
            Seed = d.seed;
            MaxTokens = (int)d.max_tokens;
            Temperature = d.temperature;
            TopK = d.top_k;
            TopP = d.top_p;
            MinP = d.min_p;
            RepeatPenalty = d.repeat_penalty;
            RepeatLastN = (int)d.repeat_last_n;
            IgnoreEos = d.ignore_eos != 0;
            Format = (ReplyFormat)d.format;
        }

        public ulong Seed { get; set; }           // 0 = a fresh random seed
        public int MaxTokens { get; set; }        // 0 = up to the end of the context
        public float Temperature { get; set; }    // 0 = greedy
        public int TopK { get; set; }             // 0 = off
        public float TopP { get; set; }           // 1 = off
        public float MinP { get; set; }           // 0 = off
        public float RepeatPenalty { get; set; }  // 1 = off
        public int RepeatLastN { get; set; }
        public bool IgnoreEos { get; set; }       // never stop on end tokens (references, benchmarks)

        // Stop strings: at most 16, each 1-256 bytes of UTF-8; null or empty = none. The reply
        // ends before the first of them it shows, which is neither streamed nor kept; text
        // that may be the start of one is streamed once the next tokens show it is not.
        // TurnStats.StopReason and StopIndex say whether one ended the reply, and which.
        public IList<string> Stop { get; set; }

        // Text the reply starts with, tokenized as plain text, from which the model goes on: a
        // format or a voice to keep ("{", "*nods* "); with the "raw" template it continues the
        // message (" and" starts a word, "," joins the last one). With Continue it starts a
        // reply that has no text yet, or (since 0.6) steers one under way, continuing its text
        // as it continues a "raw" message. It is streamed first and kept as the reply's start;
        // MaxTokens and Stop apply only to what follows it. null or "" = none.
        public string ReplyPrefix { get; set; }

        // Biases added to chosen tokens' logits before sampling, by token id: a positive bias
        // makes a token likelier, a negative one rarer; float.NegativeInfinity bans it. The ids
        // are the model's (Engine.Tokenize gives a word's, Session.EndIds those that end a
        // reply). A NaN or +inf bias, an id outside the vocabulary, or banning every token:
        // ParleyStatus.InvalidArgument. null or empty = none.
        public IDictionary<int, float> LogitBias { get; set; }

        // What the reply must be (since 0.11): Text (the default), or Json for one JSON object.
        // Each token is then drawn only among those that keep the reply's text the start of
        // an object (the sampling options choose among them), and the reply ends where the
        // object closes, with TurnStats.StopReason FormatEnd and never an end token before it.
        // ReplyPrefix (with Continue, the reply so far and the prefix) must be the start of an
        // object, and LogitBias may not ban every token the format allows at some point: else
        // ParleyStatus.InvalidArgument, as for a value that is no ReplyFormat. MaxTokens, the
        // end of the context, Stop or Interrupt can still cut the object short: it is whole
        // when StopReason says FormatEnd. Tell the model, too, what to write (the system
        // prompt, the message), or it may fill the object with little sense. A JsonSchema
        // makes it Json whatever it says.
        public ReplyFormat Format { get; set; }

        // A JSON Schema the Json reply must satisfy (since 0.12); null or "" = any object. A
        // non-empty one implies ReplyFormat.Json: the reply is held to it whatever Format says.
        // Each token is then drawn only among those that keep the reply the start of an object
        // the schema accepts, which closes only once it holds what the schema asks; properties
        // come in the schema's order, and only those it lists. The subset taken: type, enum,
        // const; properties, required, additionalProperties; items, minItems, maxItems;
        // anyOf/oneOf whose branches start differently (an object, a string, null, ...:
        // optional values); $ref within the schema ("#/$defs/X"), not recursive; true/false;
        // annotations (title, description, ...) are ignored. Another keyword that constrains
        // values (minLength, pattern, minimum, allOf, ...) throws ParleyException with Status
        // Unsupported; a schema that is not JSON, is malformed or that no object satisfies,
        // InvalidArgument; the message names the place as a JSON pointer ("/properties/n").
        // CheckJsonSchema finds these without generating.
        public string JsonSchema { get; set; }

        // Throws what a reply with JsonSchema `schema` would throw for it (ParleyException
        // with Status Unsupported or InvalidArgument, naming the place), so that a program can
        // check its schemas when it loads them; returns when the library takes it. Needs no
        // engine. "" throws InvalidArgument (JsonSchema takes it as no schema). Since 0.12.
        public static void CheckJsonSchema(string schema)
        {
            byte[] utf8 = Utf8.ToNative(schema, "schema");
            if (utf8 == null) throw new ArgumentNullException("schema");
            Library.EnsureCompatible();
            ParleyException.ThrowIfFailed(NativeMethods.parley_check_json_schema(utf8));
        }

        // The strings Stop, ReplyPrefix and JsonSchema point to, and the LogitBias array, live
        // in `strings`: dispose of it after the call.
        internal static NativeGenerateOptions ToNative(GenerateOptions options,
                                                       NativeStrings strings)
        {
            NativeGenerateOptions o = NativeGenerateOptions.Defaults();
            if (options == null) return o;
            if (options.MaxTokens < 0) throw new ArgumentOutOfRangeException("MaxTokens");
            if (options.RepeatLastN < 0) throw new ArgumentOutOfRangeException("RepeatLastN");
            o.seed = options.Seed;
            o.max_tokens = (uint)options.MaxTokens;
            o.temperature = options.Temperature;
            o.top_k = options.TopK;
            o.top_p = options.TopP;
            o.min_p = options.MinP;
            o.repeat_penalty = options.RepeatPenalty;
            o.repeat_last_n = (uint)options.RepeatLastN;
            o.ignore_eos = options.IgnoreEos ? 1 : 0;
            // Count and length limits are the library's to check, with its messages.
            IList<string> stop = options.Stop;
            o.stop = strings.AddArray(stop, "Stop");
            o.n_stop = stop == null ? 0u : (uint)stop.Count;
            o.reply_prefix = strings.Add(options.ReplyPrefix, "ReplyPrefix");
            o.logit_bias = strings.AddLogitBias(options.LogitBias, out o.n_logit_bias);
            o.format = (int)options.Format;  // the library refuses one that is no ReplyFormat
            // A Format left at its default cannot be told from Text chosen: a schema means Json.
            if (!string.IsNullOrEmpty(options.JsonSchema))
            {
                o.json_schema = strings.Add(options.JsonSchema, "JsonSchema");
                o.format = (int)ReplyFormat.Json;
            }
            return o;
        }
    }
}
