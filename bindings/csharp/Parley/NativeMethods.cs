// P/Invoke declarations for every function of include/parley.h, in the header's order.
// Strings go in as NUL-terminated UTF-8 byte[] (see Utf8.cs) and come back as IntPtr, because
// the default string marshalling is not UTF-8 on every runtime Unity ships.
using System;
using System.Runtime.InteropServices;

namespace Parley
{
    internal static class NativeMethods
    {
        // Mono and .NET map "parley" to libparley.so, libparley.dylib or parley.dll.
        // (An iOS player links the library statically and would use "__Internal" instead.)
        internal const string Library = "parley";

        // PARLEY_SCORE_WITH_END: parley_session_score_replies scores the end of each reply too.
        internal const uint ScoreWithEnd = 1;

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void LogCallback(int level, IntPtr msg, IntPtr user);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int TextCallback(IntPtr utf8, UIntPtr len, IntPtr user);

        // Since 0.10: parley_engine_options.on_load_progress.
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int ProgressCallback(float fraction, IntPtr user);

        // ---- Version, status, logging

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr parley_version();

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern uint parley_version_number();

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr parley_status_name(int status);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr parley_last_error();

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void parley_set_log_callback(LogCallback fn, IntPtr user);

        // ---- Engine

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void parley_engine_options_init_sized(
            ref NativeEngineOptions o, UIntPtr size);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_engine_open(
            [In] ref NativeEngineOptions o, out EngineHandle engine);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void parley_engine_close(IntPtr engine);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_engine_get_stats(
            EngineHandle engine, ref NativeEngineStats stats);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_engine_get_model_info(
            EngineHandle engine, ref NativeModelInfo info);

        // ---- Sessions

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void parley_session_options_init_sized(
            ref NativeSessionOptions o, UIntPtr size);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_create(
            EngineHandle engine, [In] ref NativeSessionOptions o, out SessionHandle session);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_open(
            EngineHandle engine, [In] byte[] id, out SessionHandle session);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_fork(
            SessionHandle session, [In] byte[] newId, out SessionHandle fork);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_suspend(SessionHandle session);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_interrupt(SessionHandle session);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_rewind(SessionHandle session, uint nTurns);

        // Since 0.8. overflow: a PARLEY_OVERFLOW_* value (OverflowPolicy).
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_set_overflow(SessionHandle session, int overflow);

        // systemPrompt: NUL-terminated UTF-8, or null (NULL) for none.
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_set_system_prompt(
            SessionHandle session, [In] byte[] systemPrompt);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void parley_session_close(IntPtr session);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_delete(EngineHandle engine, [In] byte[] id);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_get_info(
            SessionHandle session, ref NativeSessionInfo info);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_get_turn(
            SessionHandle session, uint index, ref NativeTurn turn);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_get_tokens(
            SessionHandle session, [Out] int[] ids, UIntPtr cap, out UIntPtr needed);

        // Since 0.9. ids may be null with cap 0 to ask only the count.
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_get_end_ids(
            SessionHandle session, [Out] int[] ids, UIntPtr cap, out UIntPtr n_ids);

        // Since 0.7. buf may be null with cap 0 to ask only the size.
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_export(
            SessionHandle session, [Out] byte[] buf, UIntPtr cap, out UIntPtr needed);

        // Since 0.7. newId: NUL-terminated UTF-8, or null (NULL) to keep the conversation's id.
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_import(
            EngineHandle engine, [In] byte[] json, [In] byte[] newId, out SessionHandle session);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_store_list_sessions(
            EngineHandle engine, [Out] byte[] buf, UIntPtr cap, out UIntPtr needed);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_store_get_session_info(
            EngineHandle engine, [In] byte[] id, ref NativeStoredSessionInfo info);

        // ---- Generation

        // Since 0.12.
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_check_json_schema([In] byte[] schema);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void parley_generate_options_init_sized(
            ref NativeGenerateOptions o, UIntPtr size);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_send(
            SessionHandle session, [In] byte[] userText, [In] ref NativeGenerateOptions o,
            TextCallback onText, IntPtr user, ref NativeTurnStats stats);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_continue(
            SessionHandle session, [In] ref NativeGenerateOptions o,
            TextCallback onText, IntPtr user, ref NativeTurnStats stats);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_prepare(
            SessionHandle session, ref NativeTurnStats stats);

        // replies: n_replies pointers to NUL-terminated UTF-8; nTokens may be null (NULL).
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_score_replies(
            SessionHandle session, [In] byte[] userText, [In] IntPtr[] replies,
            UIntPtr nReplies, uint flags, [Out] double[] logprobs, [Out] uint[] nTokens);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_count_tokens(
            SessionHandle session, [In] byte[] userText, out uint promptTokens,
            out uint contextLeft);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_session_add_exchange(
            SessionHandle session, [In] byte[] userText, [In] byte[] replyText);

        // ---- Tokens

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_tokenize(
            EngineHandle engine, [In] byte[] text, int addBos,
            [Out] int[] ids, UIntPtr cap, out UIntPtr needed);

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int parley_detokenize(
            EngineHandle engine, [In] int[] ids, UIntPtr n,
            [Out] byte[] buf, UIntPtr cap, out UIntPtr needed);
    }
}
