// Process-wide facts and settings of the native library.
using System;
using System.Runtime.InteropServices;

namespace Parley
{
    public static class Library
    {
        // The native library's "MAJOR.MINOR.PATCH".
        public static string Version
        {
            get { return Utf8.FromNative(NativeMethods.parley_version()); }
        }

        // MAJOR*10000 + MINOR*100 + PATCH.
        public static int VersionNumber
        {
            get { return (int)NativeMethods.parley_version_number(); }
        }

        // Kept in a static field: native code holds the function pointer until it is replaced.
        private static readonly NativeMethods.LogCallback s_logTrampoline = OnLog;
        private static volatile Action<LogLevel, string> s_logHandler;

        // Receives the library's log lines, on whichever thread logs; null restores the default
        // (warnings and errors to stderr). Call it before the first engine opens. The handler
        // must not call into Parley; exceptions it throws are swallowed, as they cannot cross
        // into native code.
        public static void SetLogHandler(Action<LogLevel, string> handler)
        {
            s_logHandler = handler;
            NativeMethods.parley_set_log_callback(handler == null ? null : s_logTrampoline, IntPtr.Zero);
        }

        [MonoPInvokeCallback(typeof(NativeMethods.LogCallback))]
        private static void OnLog(int level, IntPtr msg, IntPtr user)
        {
            try
            {
                Action<LogLevel, string> handler = s_logHandler;
                if (handler != null) handler((LogLevel)level, Utf8.FromNative(msg));
            }
            catch (Exception)
            {
                // Nowhere to report it: the logging thread belongs to the library.
            }
        }
    }
}
