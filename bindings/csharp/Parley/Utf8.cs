// UTF-8 in both directions, by hand: the runtime's own string marshalling uses the ANSI code
// page on some platforms, and Parley speaks UTF-8 only.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Parley
{
    internal static class Utf8
    {
        // Throws on a lone surrogate, which Encoding.UTF8 would silently turn into U+FFFD: an
        // id or a message would then not be the one given.
        private static readonly Encoding s_strict = new UTF8Encoding(false, true);

        // A NUL-terminated copy of `s`, or null for null. An embedded NUL would silently cut
        // the text on the native side, and a lone surrogate is no text UTF-8 can carry, so
        // both are refused here.
        internal static byte[] ToNative(string s, string paramName)
        {
            if (s == null) return null;
            if (s.IndexOf('\0') >= 0)
                throw new ArgumentException("contains a NUL character", paramName);
            try
            {
                var bytes = new byte[s_strict.GetByteCount(s) + 1];
                s_strict.GetBytes(s, 0, s.Length, bytes, 0);
                return bytes;
            }
            catch (EncoderFallbackException e)
            {
                throw new ArgumentException("is not valid Unicode text: a lone surrogate at index "
                                            + e.Index, paramName);
            }
        }

        // Reads a NUL-terminated string; IntPtr.Zero gives null.
        internal static string FromNative(IntPtr p)
        {
            if (p == IntPtr.Zero) return null;
            int len = 0;
            while (Marshal.ReadByte(p, len) != 0) len++;
            return FromNative(p, len);
        }

        internal static string FromNative(IntPtr p, int len)
        {
            if (len == 0) return string.Empty;
            var bytes = new byte[len];
            Marshal.Copy(p, bytes, 0, len);
            return Encoding.UTF8.GetString(bytes);
        }

        // A string stored in a byte array up to its first NUL (or its end).
        internal static string FromBuffer(byte[] buf)
        {
            if (buf == null) return string.Empty;
            int len = Array.IndexOf(buf, (byte)0);
            return Encoding.UTF8.GetString(buf, 0, len < 0 ? buf.Length : len);
        }
    }

    // Unmanaged copies of the strings (and arrays) an options struct points to, alive until
    // Dispose (the end of the call that reads the struct).
    internal sealed class NativeStrings : IDisposable
    {
        private readonly List<IntPtr> _blocks = new List<IntPtr>();

        internal IntPtr Add(string s, string paramName)
        {
            byte[] bytes = Utf8.ToNative(s, paramName);
            if (bytes == null) return IntPtr.Zero;
            IntPtr p = Alloc(bytes.Length);
            Marshal.Copy(bytes, 0, p, bytes.Length);
            return p;
        }

        // An unmanaged parley_logit_bias array of the entries of `biases`, and their count;
        // IntPtr.Zero for null or empty. The values go as they are: the library knows the
        // vocabulary and judges them.
        internal IntPtr AddLogitBias(IDictionary<int, float> biases, out uint count)
        {
            count = 0;
            if (biases == null) return IntPtr.Zero;
            // Copied first: the count and the block then agree whatever biases.Count says.
            var entries = new List<KeyValuePair<int, float>>(biases);
            if (entries.Count == 0) return IntPtr.Zero;
            int size = Marshal.SizeOf(typeof(NativeLogitBias));
            IntPtr array = Alloc(checked(size * entries.Count));
            for (int i = 0; i < entries.Count; i++)
            {
                var entry = new NativeLogitBias { token = entries[i].Key, bias = entries[i].Value };
                Marshal.StructureToPtr(entry, IntPtr.Add(array, i * size), false);
            }
            count = (uint)entries.Count;
            return array;
        }

        // An unmanaged array of pointers to copies of `strings`, for a `const char *const *`
        // with a count beside it; IntPtr.Zero for null or empty. A null element is refused:
        // C would take it for a missing string.
        internal IntPtr AddArray(IList<string> strings, string paramName)
        {
            if (strings == null || strings.Count == 0) return IntPtr.Zero;
            var pointers = new IntPtr[strings.Count];
            for (int i = 0; i < pointers.Length; i++)
            {
                if (strings[i] == null)
                    throw new ArgumentException("element " + i + " is null", paramName);
                pointers[i] = Add(strings[i], paramName);
            }
            IntPtr array = Alloc(IntPtr.Size * pointers.Length);
            Marshal.Copy(pointers, 0, array, pointers.Length);
            return array;
        }

        private IntPtr Alloc(int bytes)
        {
            IntPtr p = Marshal.AllocHGlobal(bytes);
            _blocks.Add(p);
            return p;
        }

        public void Dispose()
        {
            foreach (IntPtr p in _blocks) Marshal.FreeHGlobal(p);
            _blocks.Clear();
        }
    }
}
