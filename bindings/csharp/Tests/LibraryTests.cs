// Process-wide calls: the version and the log handler.
using System;
using System.Collections.Generic;

namespace Parley.Tests
{
    internal static class LibraryTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("library version", LibraryVersion);
            r.Add("log lines reach the handler; its exceptions do not escape", LogHandler);
        }

        private static void LibraryVersion()
        {
            string[] parts = Library.Version.Split('.');
            Assert.Equal(3, parts.Length, "version has MAJOR.MINOR.PATCH");
            int number = int.Parse(parts[0]) * 10000 + int.Parse(parts[1]) * 100 + int.Parse(parts[2]);
            Assert.Equal(number, Library.VersionNumber, "version number");
            Assert.Equal("PARLEY_E_BUSY", ParleyException.StatusName(ParleyStatus.Busy), "status name");
        }

        private static void LogHandler()
        {
            var lines = new List<KeyValuePair<LogLevel, string>>();
            try
            {
                Library.SetLogHandler((level, msg) =>
                {
                    lock (lines) lines.Add(new KeyValuePair<LogLevel, string>(level, msg));
                });
                Fixture.OpenEngine().Dispose();
                lock (lines)
                {
                    Assert.True(lines.Exists(l => l.Key == LogLevel.Info && l.Value.StartsWith("loaded ")),
                                "an info line on loading (got " + lines.Count + " lines)");
                }
                Library.SetLogHandler((level, msg) => { throw new InvalidOperationException("from the log handler"); });
                Fixture.OpenEngine().Dispose();
            }
            finally
            {
                Library.SetLogHandler(null);
            }
        }
    }
}
