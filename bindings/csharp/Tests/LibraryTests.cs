// Process-wide calls: the version and the log handler.
using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using System.Threading;

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
            r.Add("a process with a log handler exits with an engine left open",
                  ExitWithLogHandlerAndEngineLeftOpen);
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
            const int Binding = 1200;
            CheckVersion(Binding);
            CheckVersion(Binding + 1);
            CheckVersion(Binding + 100);
            CheckVersion(9999);
            CheckVersion(Library.VersionNumber);
            var e = Assert.Throws<LibraryVersionException>(() => CheckVersion(10000),
                                                           "Parley 1.0.0");
            Assert.True(
                e.Message.Contains("is Parley 1.0.0, another major version than the 0.12.0"),
                "the message says why: " + e.Message);
            Assert.Equal(10000, e.FoundVersionNumber, "the version found");
            // The last release before this binding's.
            e = Assert.Throws<LibraryVersionException>(() => CheckVersion(1100),
                                                       "Parley 0.11.0");
            Assert.True(e.Message.Contains("is Parley 0.11.0, older than the 0.12.0"),
                        "the message says why: " + e.Message);
            Assert.Equal(1100, e.FoundVersionNumber, "the version found");
            Assert.Throws<LibraryVersionException>(() => CheckVersion(905), "Parley 0.9.5");
            Assert.Throws<LibraryVersionException>(() => CheckVersion(Binding - 1),
                                                   "Parley 0.11.99");
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

        // Mono waits at exit for every thread that ever called into it; the library's idle
        // spiller logging through the handler on its own thread would keep the process alive
        // for good.
        private static void ExitWithLogHandlerAndEngineLeftOpen()
        {
            string model = Fixture.ModelPath;
            string dir = Fixture.NewTempDir();
            try
            {
                ChildProcess.Result child = ChildProcess.Run(ChildPrograms.LogWithEngineLeftOpen,
                    new[] { model, Path.Combine(dir, "chats.sqlite") }, 60000);
                Assert.True(!child.TimedOut, "the child exits by itself; it said: " + child.Output);
                Assert.Equal(0, child.ExitCode, "the child's exit code; it said: " + child.Output);
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        // The child's side: args are the model and a store path. Idle spills to a store
        // deleted under the engine fail, and the library's spiller logs a warning each time.
        internal static int LogWithEngineLeftOpenChild(string[] args)
        {
            var warned = new ManualResetEvent(false);
            Library.SetLogHandler((level, msg) =>
            {
                if (level == LogLevel.Warn) warned.Set();
            });
            var engine = new Engine(args[0], new EngineOptions
            {
                Device = "cpu", Threads = 1, StorePath = args[1], IdleSpillMs = 30
            });
            engine.CreateSession().Send("Once upon a time", Fixture.Greedy(4));
            string store = Path.GetFileName(args[1]);
            foreach (string file in Directory.GetFiles(Path.GetDirectoryName(args[1]), store + "*"))
                File.Delete(file);
            if (!warned.WaitOne(30000))
            {
                Console.Error.WriteLine("no warning of a failed spill was logged");
                return 3;
            }
            Thread.Sleep(500);  // more spills fail and log meanwhile
            // Returns without disposing the engine or its session.
            return 0;
        }
    }
}
