// The constant groups of parley.h as enums, with the header's values.
namespace Parley
{
    public enum KvType
    {
        Default = 0,  // = Int8
        Int8 = 1,     // per token and KV head scale; 4x smaller than F32
        F16 = 2,
        F32 = 3,      // reference type for exact checks
    }

    public enum OverflowPolicy
    {
        Error = 0,       // a turn that does not fit fails with ParleyStatus.ContextFull
        DropOldest = 1,  // drop the oldest turns, keep the system prompt
    }

    public enum KvSource
    {
        New = 0,       // the session had no KV before this turn
        Resident = 1,  // KV was in memory
        Restored = 2,  // KV was read back from the store
        Rebuilt = 3,   // KV was recomputed from the transcript, all or in part (see parley.h)
    }

    // Why a reply ended (TurnStats.StopReason).
    public enum StopReason
    {
        None = 0,         // no reply: the stats of Session.Prepare()
        EndToken = 1,     // the model ended it (EOS or the template's end of turn)
        MaxTokens = 2,    // it reached GenerateOptions.MaxTokens
        StopString = 3,   // it showed a stop string (TurnStats.StopIndex says which)
        ContextEnd = 4,   // it reached the end of the context
        Cancelled = 5,    // Interrupt() or Dispose(), or the text handler stopped it
        OutOfMemory = 6,  // the KV budget ran out
        FormatEnd = 7,    // since 0.11: it is whole in its GenerateOptions.Format (Json: the
                          // object closed)
    }

    // What a reply must be (GenerateOptions.Format, since 0.11).
    public enum ReplyFormat
    {
        Text = 0,  // any text
        Json = 1,  // one JSON object (RFC 8259), ending where it closes
    }

    public enum SessionState
    {
        Active = 0,
        Idle = 1,
        Spilled = 2,
    }

    public enum Role
    {
        System = 0,
        User = 1,
        Assistant = 2,
    }

    public enum LogLevel
    {
        Error = 0,
        Warn = 1,
        Info = 2,
        Debug = 3,
    }
}
