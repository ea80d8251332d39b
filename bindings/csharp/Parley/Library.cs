// Process-wide facts and settings of the native library.
using System;
using System.Runtime.InteropServices;

namespace Parley
{
    public static class Library
    {
        // The version this binding was written against (PARLEY_VERSION_NUMBER of parley.h).
        internal const int BindingVersionNumber = 0 * 10000 + 12 * 100 + 0;

        private static volatile bool s_versionChecked;

        // The native library's "MAJOR.MINOR.PATCH". Like every first use of the library, it
        // throws LibraryVersionException when the library is one this binding cannot use.
        public static string Version
        {
            get
            {
                EnsureCompatible();
                return Utf8.FromNative(NativeMethods.parley_version());
            }
        }

        // MAJOR*10000 + MINOR*100 + PATCH.
        public static int VersionNumber
        {
            get
            {
                EnsureCompatible();
                return (int)NativeMethods.parley_version_number();
            }
        }

        // Refuses a library this binding cannot use (CheckVersion); one it can use is checked
        // once. Called where a program first reaches the library: opening an engine, the
        // version, the log handler.
        internal static void EnsureCompatible()
        {
            if (s_versionChecked) return;
            CheckVersion((int)NativeMethods.parley_version_number(),
                         Utf8.FromNative(NativeMethods.parley_version()));
            s_versionChecked = true;
        }

        // Any later 0.x library serves this binding (the ABI only grows within a major
        // version); an older one may lack what it calls, another major may differ in layout.
        internal static void CheckVersion(int found, string foundText)
        {
            string want = VersionText(BindingVersionNumber);
            if (found < BindingVersionNumber)
                throw new LibraryVersionException("libparley is Parley " + foundText
                    + ", older than the " + want + " this binding needs; put a newer "
                    + "libparley where the program loads it from", found);
            if (found / 10000 != BindingVersionNumber / 10000)
                throw new LibraryVersionException("libparley is Parley " + foundText
                    + ", another major version than the " + want
                    + " this binding was written for", found);
        }

        private static string VersionText(int number)
        {
            return (number / 10000) + "." + (number / 100 % 100) + "." + (number % 100);
        }

        // Kept in a static field: native code holds the function pointer until it is replaced.
        private static readonly NativeMethods.LogCallback s_logTrampoline = OnLog;
        private static volatile Action<LogLevel, string> s_logHandler;

        // Receives the library's log lines; null restores the default (warnings and errors to
        // stderr). The handler runs on the thread that logs: the one whose call into Parley
        // logs the line (for an enumerated Stream, the thread generating its reply), or for
        // lines of the library's own threads (idle spills) a short-lived thread made for that
        // one line, which Mono adopts and which ends as the handler returns, so a handler
        // never keeps the process from exiting. Call it before the first engine opens. The
        // handler must not call into Parley, nor wait for the program's other threads;
        // exceptions it throws are swallowed, as they cannot cross into native code.
        // LibraryVersionException as Version.
        public static void SetLogHandler(Action<LogLevel, string> handler)
        {
            EnsureCompatible();
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
