// The bridge from parley_text_fn to managed code for one send: collects the reply's bytes,
// hands each piece to the caller's handler, and keeps any exception the handler throws, since
// an exception must never unwind through native frames. The native side sees only one static
// function (what AOT compilers require) and finds this object through a GCHandle in `user`.
using System;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;

namespace Parley
{
    internal sealed class TextSink
    {
        internal static readonly NativeMethods.TextCallback Trampoline = OnText;

        private readonly Func<string, bool> _onPiece;  // returns false to stop the reply
        private readonly Session _session;
        private readonly MemoryStream _reply = new MemoryStream();

        internal TextSink(Func<string, bool> onPiece, Session session)
        {
            _onPiece = onPiece;
            _session = session;
        }

        // What the handler threw, if it did; the send then stopped.
        internal Exception HandlerError { get; private set; }

        internal string Reply
        {
            get { return Encoding.UTF8.GetString(_reply.GetBuffer(), 0, (int)_reply.Length); }
        }

        [MonoPInvokeCallback(typeof(NativeMethods.TextCallback))]
        private static int OnText(IntPtr utf8, UIntPtr len, IntPtr user)
        {
            TextSink sink = null;
            try
            {
                sink = (TextSink)GCHandle.FromIntPtr(user).Target;
                // The library may deliver a last piece after a stop; the handler has had its say.
                if (sink.HandlerError != null) return 1;
                int n = checked((int)len.ToUInt64());
                var bytes = new byte[n];
                Marshal.Copy(utf8, bytes, 0, n);
                sink._reply.Write(bytes, 0, n);
                bool goOn = sink._onPiece == null || sink._onPiece(Encoding.UTF8.GetString(bytes));
                // Disposed while this call held the handle, maybe before the reply started and
                // Dispose's interrupt could reach it: stop here (this piece is kept).
                return goOn && !sink._session.Disposed ? 0 : 1;
            }
            catch (Exception e)
            {
                if (sink != null) sink.HandlerError = e;
                return 1;
            }
        }
    }
}
