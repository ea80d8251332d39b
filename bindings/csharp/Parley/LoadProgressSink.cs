// The bridge from parley_progress_fn to EngineOptions.LoadProgress for one engine open, built
// as TextSink is: one static function for the native side (what AOT compilers require), which
// finds this object through a GCHandle in `user`, and keeps what the handler throws, since an
// exception must never unwind through native frames.
using System;
using System.Runtime.InteropServices;

namespace Parley
{
    internal sealed class LoadProgressSink
    {
        // The delegate stays referenced here, so the pointer made from it stays valid.
        private static readonly NativeMethods.ProgressCallback s_trampoline = OnProgress;
        internal static readonly IntPtr Trampoline =
            Marshal.GetFunctionPointerForDelegate(s_trampoline);

        private readonly Func<float, bool> _onProgress;  // returns false to stop the open

        internal LoadProgressSink(Func<float, bool> onProgress)
        {
            _onProgress = onProgress;
        }

        // What the handler threw, if it did; the open then stopped.
        internal Exception HandlerError { get; private set; }

        [MonoPInvokeCallback(typeof(NativeMethods.ProgressCallback))]
        private static int OnProgress(float fraction, IntPtr user)
        {
            LoadProgressSink sink = null;
            try
            {
                sink = (LoadProgressSink)GCHandle.FromIntPtr(user).Target;
                // The open stops at the first non-zero answer; should another report come
                // anyway, the handler that threw is not asked again.
                if (sink.HandlerError != null) return 1;
                return sink._onProgress(fraction) ? 0 : 1;
            }
            catch (Exception e)
            {
                if (sink != null) sink.HandlerError = e;
                return 1;
            }
        }
    }
}
