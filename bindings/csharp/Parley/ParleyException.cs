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
