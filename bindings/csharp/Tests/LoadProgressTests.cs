// EngineOptions.LoadProgress: what the handler is told while an engine opens, and how it stops
// the open, by its answer or by an exception.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Parley.Tests
{
    internal static class LoadProgressTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("load progress rises from 0 to exactly 1 on the thread opening the engine",
                  ReportsRiseFromZeroToOne);
            r.Add("a load stopped by its progress handler is Cancelled and the next open works",
                  StoppedLoadIsCancelled);
            r.Add("an exception in the load progress handler comes out of the open as thrown",
                  HandlerExceptionIsRethrown);
            r.Add("the load progress handler may use another engine", OtherEngineFromHandler);
            r.Add("an engine opened without a load progress handler works", NoHandler);
        }

        private static void ReportsRiseFromZeroToOne()
        {
            var reports = new List<float>();
            var threads = new List<int>();
            EngineOptions options = Options(f =>
            {
                reports.Add(f);
                threads.Add(Thread.CurrentThread.ManagedThreadId);
                return true;
            });
            using (var engine = new Engine(Fixture.ModelPath, options))
            {
                CheckReports(reports, "an open");
                int self = Thread.CurrentThread.ManagedThreadId;
                Assert.True(threads.All(t => t == self), "every report on the opening thread");
                AssertWorks(engine, "the engine works");
            }
            // The same options again, from another thread: the reports start over, there.
            reports.Clear();
            threads.Clear();
            int worker = -1;
            LifetimeTests.RunOnThread(() =>
            {
                worker = Thread.CurrentThread.ManagedThreadId;
                new Engine(Fixture.ModelPath, options).Dispose();
            });
            CheckReports(reports, "an open on another thread");
            Assert.True(threads.All(t => t == worker), "every report on that thread");
        }

        private static void StoppedLoadIsCancelled()
        {
            Fixture.WithStoreFile(store =>
            {
                // The stop at 1 comes once the store is open: it must let go of it too.
                StopAt("its first report", f => f == 0, store);
                StopAt("a report between 0 and 1", f => f > 0 && f < 1, store);
                StopAt("its last report", f => f == 1, store);
                var reports = new List<float>();
                EngineOptions options = Options(f => { reports.Add(f); return true; });
                options.StorePath = store;
                using (var engine = new Engine(Fixture.ModelPath, options))
                {
                    CheckReports(reports, "an open after the stopped ones");
                    Assert.Equal(0, engine.Sessions.Length, "the stopped opens stored nothing");
                    AssertWorks(engine, "the engine works");
                }
            });
        }

        // Answers false to the first report `isStop` picks, and goes on otherwise.
        private static void StopAt(string where, Func<float, bool> isStop, string store)
        {
            var reports = new List<float>();
            EngineOptions options = Options(f =>
            {
                reports.Add(f);
                return !isStop(f);
            });
            options.StorePath = store;
            ParleyException e = Assert.ThrowsStatus(ParleyStatus.Cancelled,
                () => new Engine(Fixture.ModelPath, options), "an open stopped at " + where);
            Assert.True(e.Message.Contains("the load progress callback asked to stop"),
                        "the message says why: " + e.Message);
            // The stop is the only report isStop picks: none came after it.
            Assert.True(reports.Count > 0 && isStop(reports[reports.Count - 1]),
                        "stopped at " + where + ": " + Show(reports));
            Assert.Equal(1, reports.Count(isStop), "no report after the stop at " + where
                         + ": " + Show(reports));
        }

        private static void HandlerExceptionIsRethrown()
        {
            foreach (bool atOne in new[] { false, true })
            {
                string where = atOne ? "at 1" : "at the second report";
                var reports = new List<float>();
                EngineOptions options = Options(f =>
                {
                    reports.Add(f);
                    if (atOne ? f == 1 : reports.Count == 2) ThrowFromHandler();
                    return true;
                });
                var e = Assert.Throws<InvalidOperationException>(
                    () => new Engine(Fixture.ModelPath, options), "a handler throwing " + where);
                Assert.Equal("from the load progress handler", e.Message,
                             "the handler's own exception");
                Assert.True(e.StackTrace.Contains("ThrowFromHandler"),
                            "its stack trace starts in the handler: " + e.StackTrace);
                if (atOne)
                    Assert.Equal(1f, reports[reports.Count - 1], "the last report, thrown at");
                else
                    Assert.Equal(2, reports.Count, "no report after the exception: "
                                 + Show(reports));
            }
            using (Engine engine = Fixture.OpenEngine())
                AssertWorks(engine, "an engine opened afterwards works");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        private static void ThrowFromHandler()
        {
            throw new InvalidOperationException("from the load progress handler");
        }

        private static void OtherEngineFromHandler()
        {
            using (Engine other = Fixture.OpenEngine())
            {
                string during = null;
                EngineOptions options = Options(f =>
                {
                    if (f == 0)
                    {
                        using (Session s = Fixture.RawSession(other))
                            during = s.Send("Once upon a time", Fixture.Greedy(4));
                    }
                    return true;
                });
                using (var engine = new Engine(Fixture.ModelPath, options))
                using (Session s = Fixture.RawSession(other))
                {
                    Assert.True(during != null, "the handler's send returned");
                    Assert.Equal(s.Send("Once upon a time", Fixture.Greedy(4)), during,
                                 "the reply given inside the handler");
                    AssertWorks(engine, "the engine opened meanwhile works");
                }
            }
        }

        private static void NoHandler()
        {
            using (var engine = new Engine(Fixture.ModelPath, Options(null)))
                AssertWorks(engine, "an engine opened without a handler works");
        }

        // Those of Fixture.OpenEngine, with a handler.
        private static EngineOptions Options(Func<float, bool> onProgress)
        {
            return new EngineOptions
            {
                Device = "cpu", KvType = KvType.F32, Threads = 2, LoadProgress = onProgress
            };
        }

        // Strictly rising from exactly 0 to exactly 1 makes every report lie in [0, 1] and
        // only the last be 1. stories260k has enough weights for reports between the two.
        private static void CheckReports(List<float> reports, string what)
        {
            Assert.True(reports.Count >= 3, what + ": reports besides 0 and 1: " + Show(reports));
            Assert.Equal(0f, reports[0], what + ": the first report");
            Assert.Equal(1f, reports[reports.Count - 1], what + ": the last report");
            int notAbove = Enumerable.Range(1, reports.Count - 1)
                .FirstOrDefault(i => !(reports[i] > reports[i - 1]));
            Assert.True(notAbove == 0, what + ": report " + notAbove
                        + " not above the one before: " + Show(reports));
        }

        private static void AssertWorks(Engine engine, string what)
        {
            using (Session s = Fixture.RawSession(engine))
                Assert.True(s.Send("Once upon a time", Fixture.Greedy(4)).Length > 0, what);
        }

        private static string Show(List<float> reports)
        {
            return "[" + string.Join(", ", reports.Select(f => f.ToString("R"))) + "]";
        }
    }
}
