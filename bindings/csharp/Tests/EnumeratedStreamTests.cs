// The enumerated Stream: one reply per call, and the reply of a stream left paused is kept by
// the time Session.Dispose returns, also in a process that exits right after.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace Parley.Tests
{
    internal static class EnumeratedStreamTests
    {
        private const string Prompt = "Once upon a time";
        private const string Id = "paused";

        public static void Register(TestRunner r)
        {
            r.Add("a Stream result is enumerated once; enumerating it again sends nothing",
                  StreamEnumeratesOnce);
            r.Add("a StreamContinue result is enumerated once", StreamContinueEnumeratesOnce);
            r.Add("Dispose returns once a paused stream's reply is stored",
                  DisposeStoresPausedReply);
            r.Add("Dispose in the loop body stores the reply and ends the loop",
                  DisposeInLoopBodyStoresReply);
            r.Add("Dispose from another thread while the loop body runs stores the reply",
                  DisposeFromAnotherThreadStoresReply);
            r.Add("a process that exits right after Dispose keeps the paused stream's reply",
                  ExitAfterDisposeKeepsReply);
            r.Add("Environment.Exit with a paused stream still referenced ends the process",
                  ExitWithPausedStreamEnds);
            r.Add("Stream and StreamContinue refuse bad arguments at the call, as Send",
                  StreamRefusesBadArgumentsAtTheCall);
        }

        private static void StreamEnumeratesOnce()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                IEnumerable<string> pieces = s.Stream(Prompt, Fixture.Greedy(4));
                Assert.True(pieces.Any(), "a first enumeration has pieces");
                Assert.Equal(2, s.Info.Turns, "the message and its reply");
                var e = Assert.Throws<InvalidOperationException>(() => pieces.ToList(),
                                                                 "a second enumeration");
                Assert.True(e.Message.Contains("enumerated already"), "says why: " + e.Message);
                Assert.Equal(2, s.Info.Turns, "the second enumeration sent nothing");
                Assert.True(s.Stream(" Then", Fixture.Greedy(4)).Any(), "a new call streams");
                Assert.Equal(4, s.Info.Turns, "a new call sends its message");
            }
        }

        private static void StreamContinueEnumeratesOnce()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send(Prompt, Fixture.Greedy(2));
                IEnumerable<string> more = s.StreamContinue(Fixture.Greedy(2));
                string first = string.Concat(more);
                int tokens = s.Tokens.Length;
                Assert.Throws<InvalidOperationException>(() => more.GetEnumerator(),
                                                         "a second enumeration");
                Assert.Equal(tokens, s.Tokens.Length, "nothing more was generated");
                Assert.True(s.Turns[1].Text.EndsWith(first), "the reply went on once");
            }
        }

        // Holds an enumerator of a long reply after three pieces; returns what it saw.
        private static string ReadThreePieces(IEnumerator<string> pieces)
        {
            string seen = "";
            for (int i = 0; i < 3; i++)
            {
                Assert.True(pieces.MoveNext(), "piece " + i);
                seen += pieces.Current;
            }
            return seen;
        }

        // Reopened right after Dispose: the session is closed and its turn in the store.
        private static void AssertStored(Engine engine, string reply)
        {
            using (Session reopened = engine.OpenSession(Id))
            {
                Assert.Equal(2, reopened.Info.Turns, "the message and the kept reply");
                Assert.Equal(reply, reopened.Turns[1].Text, "the kept reply is what was read");
            }
        }

        private static void DisposeStoresPausedReply()
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = Fixture.OpenEngine(store))
                {
                    Session s = Fixture.RawSession(engine, Id);
                    IEnumerator<string> pieces =
                        s.Stream(Prompt, Fixture.Greedy(0)).GetEnumerator();
                    string seen = ReadThreePieces(pieces);
                    s.Dispose();
                    AssertStored(engine, seen);
                    Assert.ThrowsStatus(ParleyStatus.Cancelled, () => pieces.MoveNext(),
                                        "reading on after Dispose");
                    pieces.Dispose();
                }
            });
        }

        // Disposes the session from the loop body once it has seen `minLength` characters, by
        // `dispose`, and checks that the reply read so far is stored and the loop ends.
        private static void DisposeInLoopStoresReply(int minLength, Action<Session> dispose)
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = Fixture.OpenEngine(store))
                {
                    Session s = Fixture.RawSession(engine, Id);
                    string seen = "";
                    Assert.ThrowsStatus(ParleyStatus.Cancelled, () =>
                    {
                        foreach (string piece in s.Stream(Prompt, Fixture.Greedy(0)))
                        {
                            seen += piece;
                            if (seen.Length < minLength) continue;
                            dispose(s);
                            AssertStored(engine, seen);
                        }
                    }, "the loop after Dispose");
                }
            });
        }

        private static void DisposeInLoopBodyStoresReply()
        {
            DisposeInLoopStoresReply(8, s => s.Dispose());
        }

        private static void DisposeFromAnotherThreadStoresReply()
        {
            DisposeInLoopStoresReply(0, s =>
            {
                var disposer = new Thread(s.Dispose);
                disposer.Start();
                disposer.Join();
            });
        }

        // As a Unity coroutine leaves a stream: the process ends right after Dispose, and the
        // stream's worker, a background thread, is not waited for at exit.
        private static void ExitAfterDisposeKeepsReply()
        {
            Fixture.WithStoreFile(store =>
            {
                ChildProcess.Result child = ChildProcess.Run(
                    ChildPrograms.DisposePausedStream, new[] { Fixture.ModelPath, store }, 60000);
                Assert.True(!child.TimedOut, "the child exits: " + child.Output);
                Assert.Equal(0, child.ExitCode, "the child's exit code; it said: " + child.Output);
                string seen = child.Output.Split('\n')
                    .First(l => l.StartsWith(ChildPrograms.SeenPrefix))
                    .Substring(ChildPrograms.SeenPrefix.Length);
                using (Engine engine = Fixture.OpenEngine(store))
                {
                    StoredSessionInfo info = engine.GetStoredSessionInfo(Id);
                    Assert.Equal(2, info.Turns, "the message and the kept reply are stored");
                    AssertStored(engine, Uri.UnescapeDataString(seen));
                }
            });
        }

        private static void ExitWithPausedStreamEnds()
        {
            // The runtime waits 40 s for finalizers at exit: a child still running after 20 s
            // hangs there. (Started with mono --debug, the child would not show the wait.)
            ChildProcess.Result child = ChildProcess.Run(
                ChildPrograms.ExitWithPausedStream, new[] { Fixture.ModelPath }, 20000, false);
            Assert.True(!child.TimedOut, "the child exits: " + child.Output);
            Assert.Equal(0, child.ExitCode, "the child's exit code; it said: " + child.Output);
        }

        // A game object that holds the line it shows, when the game quits.
        private static IEnumerator<string> _heldPieces;

        // The child's side of ExitWithPausedStreamEnds: args are the model.
        internal static int ExitWithPausedStreamChild(string[] args)
        {
            var engine = new Engine(args[0], new EngineOptions { Device = "cpu", Threads = 1 });
            Session s = Fixture.RawSession(engine);
            _heldPieces = s.Stream(Prompt, Fixture.Greedy(50)).GetEnumerator();
            _heldPieces.MoveNext();
            Console.WriteLine("exiting");  // (without output first, Mono skips the wait)
            Environment.Exit(0);
            return 1;
        }

        private static void StreamRefusesBadArgumentsAtTheCall()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.Throws<ArgumentException>(() => s.Stream("a\0b"), "a NUL in the text");
                Assert.Throws<ArgumentOutOfRangeException>(
                    () => s.Stream(Prompt, new GenerateOptions { MaxTokens = -1 }), "MaxTokens");
                Assert.Throws<ArgumentException>(
                    () => s.Stream(Prompt, new GenerateOptions { Stop = new[] { "x\0" } }),
                    "a NUL in a stop string");
                s.Send(Prompt, Fixture.Greedy(2));
                Assert.Throws<ArgumentException>(
                    () => s.StreamContinue(new GenerateOptions { ReplyPrefix = "\0" }),
                    "a NUL in the reply prefix");
                Assert.Equal(2, s.Info.Turns, "nothing was sent");
            }
        }

        // The child's side of ExitAfterDisposeKeepsReply: args are the model and the store.
        internal static int DisposePausedStreamChild(string[] args)
        {
            var engine = new Engine(args[0], new EngineOptions
            {
                Device = "cpu", KvType = KvType.F32, Threads = 1, StorePath = args[1]
            });
            Session s = Fixture.RawSession(engine, Id);
            IEnumerator<string> pieces = s.Stream(Prompt, Fixture.Greedy(0)).GetEnumerator();
            string seen = ReadThreePieces(pieces);
            Console.WriteLine(ChildPrograms.SeenPrefix + Uri.EscapeDataString(seen));
            s.Dispose();
            // Returns at once, neither the enumerator nor the engine disposed.
            return 0;
        }
    }
}
