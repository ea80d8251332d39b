// The PARLEY_E_* codes of parley.h, with the same values (they never change; new ones may be
// added, so code switching on them needs a default case).
namespace Parley
{
    public enum ParleyStatus
    {
        Ok = 0,
        InvalidArgument = 1,  // a NULL, out-of-range or malformed argument
        NotFound = 2,         // a file, session id or token that does not exist
        Io = 3,               // reading or mapping a file failed
        BadModel = 4,         // the model file or directory is malformed
        Unsupported = 5,      // a valid request this build or version cannot serve
        OutOfMemory = 6,      // an allocation failed
        ContextFull = 7,      // the conversation does not fit the context window
        Busy = 8,             // the session is in use by another call
        Cancelled = 9,        // stopped by Interrupt(), Session.Dispose() or a callback
        Corrupt = 10,         // stored data failed its checks
        ModelMismatch = 11,   // stored data belongs to another model
        Storage = 12,         // the session store failed (disk full, locked, I/O)
        Backend = 13,         // the compute device failed
        Internal = 14,        // a bug in Parley; the message says where
        Misuse = 15,          // a closed or foreign handle
    }
}
