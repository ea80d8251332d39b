// Owning wrappers of parley_engine* and parley_session*. A SafeHandle is reference-counted
// around every P/Invoke call that takes it, so Dispose or the finalizer never closes a handle
// while a call on another thread (a send, an interrupt) still uses it. The library frees an
// engine only when its last session has closed, so these may be released in any order,
// including by finalizers during a collection or at process exit.
using System;
using System.Runtime.InteropServices;

namespace Parley
{
    internal sealed class EngineHandle : SafeHandle
    {
        // Called by the marshaller for `out EngineHandle`.
        private EngineHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            NativeMethods.parley_engine_close(handle);
            return true;
        }
    }

    internal sealed class SessionHandle : SafeHandle
    {
        // Called by the marshaller for `out SessionHandle`.
        private SessionHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            NativeMethods.parley_session_close(handle);
            return true;
        }
    }
}
