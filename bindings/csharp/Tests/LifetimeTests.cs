// Handles may be released in any order, by Dispose or by the finalizer, without a crash: the
// library keeps an engine alive until its last session closes.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.ExceptionServices;
using System.Threading;

namespace Parley.Tests
{
    internal static class LifetimeTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("engine disposed before its session", EngineDisposedFirst);
            r.Add("sessions left to the finalizer are closed", SessionsLeftToFinalizer);
            r.Add("engine and sessions left to the finalizer", EverythingLeftToFinalizer);
            r.Add("half-read enumerated streams dropped with their sessions are closed",
                  HalfReadStreamsDropped);
        }

        private static void EngineDisposedFirst()
        {
            Engine engine = Fixture.OpenEngine();
            Session s = Fixture.RawSession(engine);
            Session fork;
            engine.Dispose();
            // The session keeps the native engine alive and stays usable.
            string reply = s.Send("Once upon a time", Fixture.Greedy(4));
            Assert.True(reply.Length > 0, "a reply after the engine was disposed");
            fork = s.Fork();
            s.Dispose();
            fork.Send(" Then", Fixture.Greedy(4));
            fork.Dispose();
        }

        private static void SessionsLeftToFinalizer()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                // Created on a thread that then ends, so no stack slot of ours still points
                // to them and the collector may take them.
                RunOnThread(() =>
                {
                    for (int i = 0; i < 3; i++) Fixture.RawSession(engine).Send("Once upon a time", Fixture.Greedy(2));
                });
                Assert.Equal(3, OpenSessions(engine), "sessions before the collection");
                for (int i = 0; i < 50 && OpenSessions(engine) > 0; i++) Collect();
                Assert.Equal(0, OpenSessions(engine), "sessions after their finalizers ran");
            }
        }

        private static void EverythingLeftToFinalizer()
        {
            var engines = new List<WeakReference>();
            var sessions = new List<WeakReference>();
            RunOnThread(() =>
            {
                for (int e = 0; e < 4; e++)
                {
                    Engine engine = Fixture.OpenEngine();
                    engines.Add(new WeakReference(engine));
                    for (int i = 0; i < 2; i++)
                    {
                        Session s = Fixture.RawSession(engine);
                        s.Send("Once upon a time", Fixture.Greedy(2));
                        sessions.Add(new WeakReference(s));
                        sessions.Add(new WeakReference(s.Fork()));
                    }
                }
            });
            // Engines and sessions are finalized in whatever order the collector picks. Mono
            // scans stacks conservatively, so a stale word may keep an object or two alive:
            // ask for most, not all.
            for (int i = 0; i < 20; i++) Collect();
            int enginesFreed = engines.Count(w => !w.IsAlive);
            int sessionsFreed = sessions.Count(w => !w.IsAlive);
            Console.WriteLine("         finalized {0} of {1} engines, {2} of {3} sessions",
                              enginesFreed, engines.Count, sessionsFreed, sessions.Count);
            Assert.True(enginesFreed * 2 >= engines.Count, "most engines were finalized");
            Assert.True(sessionsFreed * 2 >= sessions.Count, "most sessions were finalized");
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.True(s.Send("Once", Fixture.Greedy(2)).Length > 0, "the library works afterwards");
            }
        }

        private static void HalfReadStreamsDropped()
        {
            const int Streams = 8;
            using (Engine engine = Fixture.OpenEngine())
            {
                // Each reply waits for its loop to go on; a dropped enumerator must stop it, or
                // its thread holds the session for good.
                RunOnThread(() =>
                {
                    for (int i = 0; i < Streams; i++)
                    {
                        IEnumerator<string> pieces = Fixture.RawSession(engine)
                            .Stream("Once upon a time", Fixture.Greedy(0)).GetEnumerator();
                        Assert.True(pieces.MoveNext(), "a first piece");
                    }
                });
                Assert.Equal(Streams, OpenSessions(engine), "sessions before the collection");
                for (int i = 0; i < 100 && OpenSessions(engine) > 0; i++) Collect();
                // Mono scans stacks conservatively: stale words keep some enumerators alive
                // (up to half of them in trial runs), so ask for some, not all. Were dropped
                // enumerators not to stop their replies, none would close.
                int closed = Streams - OpenSessions(engine);
                Console.WriteLine("         closed {0} of {1} sessions", closed, Streams);
                Assert.True(closed > 0, "sessions were closed");
            }
        }

        private static int OpenSessions(Engine engine)
        {
            EngineStats st = engine.Stats;
            return st.SessionsActive + st.SessionsIdle + st.SessionsSpilled;
        }

        private static void Collect()
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            Thread.Sleep(10);
        }

        // Runs action on a thread of its own and waits for it; what it threw is thrown here.
        internal static void RunOnThread(Action action)
        {
            Exception error = null;
            var t = new Thread(() =>
            {
                try { action(); } catch (Exception e) { error = e; }
            });
            t.Start();
            t.Join();
            if (error != null) ExceptionDispatchInfo.Capture(error).Throw();
        }
    }
}
