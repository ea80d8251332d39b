// Process-wide calls: the version and the log handler.
using System;
using System.Collections.Generic;
using System.Reflection;

namespace Parley.Tests
{
    internal static class LibraryTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("library version", LibraryVersion);
            r.Add("an older library or one of another major version is refused",
                  OtherVersionsAreRefused);
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

        // Library.CheckVersion, which every first use of the library runs on the version it
        // reports (a library that reports another takes a build of its own to test).
        private static void CheckVersion(int number)
        {
            MethodInfo check = typeof(Library).GetMethod(
                "CheckVersion", BindingFlags.NonPublic | BindingFlags.Static);
            Assert.True(check != null, "Library.CheckVersion exists");
            string text = (number / 10000) + "." + (number / 100 % 100) + "." + (number % 100);
            try
            {
                check.Invoke(null, new object[] { number, text });
            }
            catch (TargetInvocationException e)
            {
                throw e.InnerException;
            }
        }

        private static void OtherVersionsAreRefused()
        {
            // As the Python binding: any later 0.x serves; an older library may lack what the
            // binding calls, another major may differ in layout.
            const int Binding = 803;
            CheckVersion(Binding);
            CheckVersion(Binding + 1);
            CheckVersion(Binding + 100);
            CheckVersion(Library.VersionNumber);
            var e = Assert.Throws<LibraryVersionException>(() => CheckVersion(10000),
                                                           "Parley 1.0.0");
            Assert.True(e.Message.Contains("is Parley 1.0.0, another major version than the 0.8.3"),
                        "the message says why: " + e.Message);
            Assert.Equal(10000, e.FoundVersionNumber, "the version found");
            e = Assert.Throws<LibraryVersionException>(() => CheckVersion(Binding - 100),
                                                       "Parley 0.7.3");
            Assert.True(e.Message.Contains("is Parley 0.7.3, older than the 0.8.3"),
                        "the message says why: " + e.Message);
            Assert.Throws<LibraryVersionException>(() => CheckVersion(Binding - 1), "Parley 0.8.2");
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
