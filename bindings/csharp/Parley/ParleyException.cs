// A failed Parley call: its status code and the library's message for it.
using System;

namespace Parley
{
    public class ParleyException : Exception
    {
        public ParleyException(ParleyStatus status, string message)
            : base(string.IsNullOrEmpty(message) ? StatusName(status) : message)
        {
            Status = status;
        }

        public ParleyStatus Status { get; private set; }

        // The reply of the turn the session kept although the call failed; null when it kept
        // none. Set by Session.Send, Continue and their streaming forms on Cancelled
        // (Interrupt or Dispose stopped the reply: its partial text), on OutOfMemory when the
        // KV budget ran out during the reply (it ends there) or storing the finished turn
        // failed, and on Storage (the store did not take the turn: it is kept in memory and
        // stored with the next one; or another engine on the same store file changed the
        // conversation, whose turns then stay in memory only). From Continue it is the text
        // that call added to the reply. Session.LastStats then describes the turn.
        public string Reply { get; internal set; }

        // "PARLEY_E_BUSY" and so on, as the C library names the code.
        public static string StatusName(ParleyStatus status)
        {
            return Utf8.FromNative(NativeMethods.parley_status_name((int)status));
        }

        public override string ToString()
        {
            return StatusName(Status) + ": " + base.ToString();
        }

        // Turns a non-zero status into an exception. It must run right after the failing call
        // on the same thread: parley_last_error() is per thread and the next failure replaces it.
        internal static void ThrowIfFailed(int status)
        {
            if (status != 0) throw FromLastError(status);
        }

        internal static ParleyException FromLastError(int status)
        {
            string message = Utf8.FromNative(NativeMethods.parley_last_error());
            return new ParleyException((ParleyStatus)status, message);
        }
    }
}
