// The loaded libparley is a version this binding cannot use: older than the one it was
// written for (it may lack a function the binding calls), or of another major version (its
// structs may differ). Thrown by the first use of the library (Engine, Library.Version,
// Library.VersionNumber, Library.SetLogHandler) before anything else is done with it.
using System;

namespace Parley
{
    public sealed class LibraryVersionException : Exception
    {
        internal LibraryVersionException(string message, int found) : base(message)
        {
            FoundVersionNumber = found;
        }

        // The loaded library's MAJOR*10000 + MINOR*100 + PATCH.
        public int FoundVersionNumber { get; private set; }
    }
}
