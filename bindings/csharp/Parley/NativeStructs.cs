// The structs of include/parley.h, field for field (the names are the C names, so the layout
// test can compare every offset with the C compiler's). size_t is UIntPtr, pointers are IntPtr,
// fixed char arrays are byte[] of the same length. Each struct starts with struct_size, which
// the caller sets to the size it was built with: Marshal.SizeOf of the struct below.
using System;
using System.Runtime.InteropServices;

namespace Parley
{
    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeEngineOptions
    {
        public UIntPtr struct_size;
        public IntPtr model_path;
        public IntPtr store_path;
        public IntPtr device;
        public int n_threads;
        public int kv_type;
        public ulong kv_budget_bytes;
        public uint idle_spill_ms;
        public uint context_length;
        public IntPtr on_load_progress;  // since 0.10: parley_progress_fn
        public IntPtr load_progress_user;

        internal static NativeEngineOptions Defaults()
        {
            var o = new NativeEngineOptions();
            NativeMethods.parley_engine_options_init_sized(ref o, SizeOf<NativeEngineOptions>.Value);
            return o;
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeEngineStats
    {
        public UIntPtr struct_size;
        public uint sessions_active;
        public uint sessions_idle;
        public uint sessions_spilled;
        public uint reserved0;
        public ulong kv_blocks_total;
        public ulong kv_blocks_used;
        public ulong kv_blocks_shared;
        public ulong kv_blocks_cached;
        public ulong kv_bytes_per_token;
        public ulong kv_bytes_resident;
        public ulong kv_budget_bytes;
        public ulong prefix_hits;
        public ulong prefix_misses;
        public ulong store_bytes;
        public ulong decode_steps;
        public ulong decode_tokens;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeModelInfo
    {
        public UIntPtr struct_size;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 128)] public byte[] name;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 32)] public byte[] architecture;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 32)] public byte[] chat_template;
        public uint n_vocab;
        public uint n_layers;
        public uint n_heads;
        public uint n_kv_heads;
        public uint head_dim;
        public uint embedding_length;
        public uint context_length;
        public uint reserved0;
        public ulong n_params;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 32)] public byte[] backend;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeSessionOptions
    {
        public UIntPtr struct_size;
        public IntPtr id;
        public IntPtr system_prompt;
        public IntPtr chat_template;
        public IntPtr cache_scope;
        public int overflow;
        public int reserved0;

        internal static NativeSessionOptions Defaults()
        {
            var o = new NativeSessionOptions();
            NativeMethods.parley_session_options_init_sized(ref o, SizeOf<NativeSessionOptions>.Value);
            return o;
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeSessionInfo
    {
        public UIntPtr struct_size;
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 128)] public byte[] id;
        public uint n_turns;
        public uint n_tokens;
        public int state;
        public int overflow;  // since 0.8 (was reserved0): PARLEY_OVERFLOW_*
        public ulong kv_bytes_resident;
        public ulong kv_bytes_stored;
        // Since 0.8: the session's template, NUL-terminated.
        [MarshalAs(UnmanagedType.ByValArray, SizeConst = 32)] public byte[] chat_template;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeStoredSessionInfo  // since 0.4
    {
        public UIntPtr struct_size;
        public long created_unix_ms;
        public long updated_unix_ms;
        public uint n_turns;
        public int is_open;
        public ulong kv_bytes_stored;
        public int same_model;
        public int reserved0;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeTurn
    {
        public UIntPtr struct_size;
        public IntPtr text;
        public int role;
        public uint n_tokens;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeLogitBias  // since 0.4
    {
        public int token;
        public float bias;
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeGenerateOptions
    {
        public UIntPtr struct_size;
        public ulong seed;
        public uint max_tokens;
        public float temperature;
        public int top_k;
        public float top_p;
        public float min_p;
        public float repeat_penalty;
        public uint repeat_last_n;
        public int ignore_eos;
        public IntPtr stop;  // since 0.3: const char *const *, n_stop UTF-8 strings
        public uint n_stop;
        public int reserved0;
        public IntPtr reply_prefix;  // since 0.3: const char *, UTF-8
        public IntPtr logit_bias;  // since 0.4: const parley_logit_bias *, n_logit_bias entries
        public uint n_logit_bias;
        public int format;  // since 0.11 (was reserved1): PARLEY_FORMAT_*
        public IntPtr json_schema;  // since 0.12: const char *, UTF-8

        internal static NativeGenerateOptions Defaults()
        {
            var o = new NativeGenerateOptions();
            NativeMethods.parley_generate_options_init_sized(ref o, SizeOf<NativeGenerateOptions>.Value);
            return o;
        }
    }

    [StructLayout(LayoutKind.Sequential)]
    internal struct NativeTurnStats
    {
        public UIntPtr struct_size;
        public uint prompt_tokens;
        public uint reused_tokens;
        public uint computed_tokens;
        public uint generated_tokens;
        public double ttft_ms;
        public double tpot_ms;
        public double restore_ms;
        public int kv_source;
        public int reserved0;
        public int stop_reason;  // since 0.3
        public int stop_index;
    }

    // The caller's struct_size, computed once per struct type.
    internal static class SizeOf<T> where T : struct
    {
        internal static readonly UIntPtr Value = new UIntPtr((uint)Marshal.SizeOf(typeof(T)));
    }
}
