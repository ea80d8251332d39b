// Failures surface as ParleyException with the C status and message, or as the .NET exception
// a .NET caller expects (disposed objects, bad arguments, the caller's own exceptions).
using System;
using System.Collections.Generic;
using System.Threading;

namespace Parley.Tests
{
    internal static class ErrorTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("a missing model is NotFound", MissingModelIsNotFound);
            r.Add("an unknown template is InvalidArgument", UnknownTemplateIsInvalidArgument);
            r.Add("a disposed session or engine throws ObjectDisposedException", DisposedObjectsThrow);
            r.Add("Interrupt from another thread cancels the send", InterruptFromAnotherThreadCancels);
            r.Add("Dispose from another thread cancels the send", DisposeFromAnotherThreadCancels);
            r.Add("an exception in the text handler comes out of Stream", HandlerExceptionIsRethrown);
            r.Add("calling the session from its own handler is Busy", ReentrantCallIsBusy);
            r.Add("a NUL inside text is refused", EmbeddedNulIsRefused);
            r.Add("a lone surrogate in a string argument is refused, naming it",
                  LoneSurrogateIsRefused);
            r.Add("an exception in an enumerated stream's loop stops the reply at its piece",
                  StreamLoopExceptionStops);
            r.Add("Interrupt from another thread stops an enumerated stream before another piece",
                  InterruptStopsEnumeratedStream);
            r.Add("Dispose from another thread stops an enumerated stream before another piece",
                  DisposeStopsEnumeratedStream);
            r.Add("Dispose closes a session whose enumerated stream was left paused",
                  DisposeEndsPausedStream);
            r.Add("Id is readable while a reply runs", IdWhileReplyRuns);
        }

        private static void MissingModelIsNotFound()
        {
            ParleyException e = Assert.ThrowsStatus(ParleyStatus.NotFound,
                () => new Engine("/nonexistent/parley/model.gguf"), "opening a missing model");
            Assert.True(e.Message.Contains("/nonexistent/parley/model.gguf"), "the message names the path: " + e.Message);
        }

        private static void UnknownTemplateIsInvalidArgument()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => engine.CreateSession(new SessionOptions { ChatTemplate = "no-such-template" }),
                    "creating a session with an unknown template");
                Assert.True(e.Message.Contains("no-such-template"), "the message names the template: " + e.Message);
            }
        }

        private static void DisposedObjectsThrow()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                s.Dispose();
                s.Dispose();  // a second Dispose is harmless
                Assert.Throws<ObjectDisposedException>(() => s.Send("x"), "Send after Dispose");
                Assert.Throws<ObjectDisposedException>(() => { var unused = s.Info; }, "Info after Dispose");
                Assert.Throws<ObjectDisposedException>(() => s.Interrupt(), "Interrupt after Dispose");
                Assert.Throws<ObjectDisposedException>(() => s.Stream("x"), "Stream after Dispose");
                engine.Dispose();
                Assert.Throws<ObjectDisposedException>(() => engine.CreateSession(), "CreateSession after Dispose");
            }
        }

        private static void InterruptFromAnotherThreadCancels()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var firstPiece = new ManualResetEvent(false);
                var interrupted = new ManualResetEvent(false);
                var stopper = new Thread(() =>
                {
                    firstPiece.WaitOne();
                    s.Interrupt();
                    interrupted.Set();
                });
                stopper.Start();
                string streamed = "";
                // The handler holds the send at its first piece until the interrupt is in, so
                // the interrupt lands while the send runs, not before or after it.
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.Cancelled,
                    () => s.Stream("Once upon a time", Fixture.Greedy(0), piece =>
                    {
                        streamed += piece;
                        firstPiece.Set();
                        Assert.True(interrupted.WaitOne(10000), "the other thread interrupted");
                    }), "an interrupted send");
                stopper.Join();
                Assert.True(s.LastStats.GeneratedTokens < 10, "stopped within a few tokens (" + s.LastStats.GeneratedTokens + ")");
                Assert.Equal(streamed, s.Turns[1].Text, "the partial reply is kept as the turn");
                Assert.Equal(streamed, e.Reply, "the exception carries the partial reply");
            }
        }

        private static void DisposeFromAnotherThreadCancels()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                var firstPiece = new ManualResetEvent(false);
                var disposed = new ManualResetEvent(false);
                var closer = new Thread(() =>
                {
                    firstPiece.WaitOne();
                    s.Dispose();
                    disposed.Set();
                });
                closer.Start();
                string streamed = "";
                // Held at its first piece, as above, until Dispose has returned.
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.Cancelled,
                    () => s.Stream("Once upon a time", Fixture.Greedy(0), piece =>
                    {
                        streamed += piece;
                        firstPiece.Set();
                        Assert.True(disposed.WaitOne(10000), "the other thread disposed");
                    }), "a send whose session was disposed");
                closer.Join();
                Assert.Equal(streamed, e.Reply, "the exception carries the partial reply");
                Assert.Equal(StopReason.Cancelled, s.LastStats.StopReason, "stop reason");
                int generated = s.LastStats.GeneratedTokens;
                Assert.True(generated < 10, "stopped within a few tokens (" + generated + ")");
                Assert.Throws<ObjectDisposedException>(() => s.Send("x"), "Send after Dispose");
                Assert.Equal(0, engine.Stats.SessionsActive, "the session is closed");
            }
        }

        private static void HandlerExceptionIsRethrown()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var e = Assert.Throws<InvalidOperationException>(() => s.Stream("Once upon a time", Fixture.Greedy(16), piece =>
                {
                    throw new InvalidOperationException("from the handler");
                }), "a throwing handler");
                Assert.Equal("from the handler", e.Message, "the handler's own exception");
                Assert.True(e.StackTrace.Contains("ErrorTests"), "its stack trace starts in the handler");
                Assert.Equal(KvSource.New, s.LastStats.KvSource, "the cancelled turn's stats are kept");
                Assert.Equal(2, s.Info.Turns, "the stopped turn is kept");
                s.Send(" Then", Fixture.Greedy(4));  // the session is usable afterwards
            }
        }

        private static void ReentrantCallIsBusy()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.ThrowsStatus(ParleyStatus.Busy, () => s.Stream("Once upon a time", Fixture.Greedy(4), piece =>
                {
                    var unused = s.Info;
                }), "Info from inside the session's handler");
            }
        }

        private static void EmbeddedNulIsRefused()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.Throws<ArgumentException>(() => s.Send("cut\0here"), "text with a NUL");
                Assert.Throws<ArgumentNullException>(() => s.Send(null), "null text");
            }
        }

        private static void LoneSurrogateIsRefused()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                // UTF-8 cannot carry a lone surrogate; taken as U+FFFD, an id or a message would
                // silently not be the one given.
                const string Lone = "a\ud800b";
                var calls = new Dictionary<string, Action>
                {
                    { "text", () => s.Send(Lone) },
                    { "Id", () => engine.CreateSession(new SessionOptions { Id = Lone }) },
                    { "id", () => engine.OpenSession("x\udfff") },
                    { "userText", () => s.AddExchange(Lone, "b") },
                    { "replyText", () => s.AddExchange("a", "\ud83d") },
                    { "replies", () => s.ScoreReplies("a", new[] { "b", Lone }) },
                    { "systemPrompt", () => s.SetSystemPrompt(Lone) },
                    { "Stop", () => s.Send("a", new GenerateOptions { Stop = new[] { Lone } }) },
                    { "newId", () => s.Fork(Lone) },
                };
                foreach (KeyValuePair<string, Action> call in calls)
                {
                    var e = Assert.Throws<ArgumentException>(call.Value, call.Key);
                    Assert.Equal(call.Key, e.ParamName, call.Key + ": the parameter named");
                    Assert.True(e.Message.Contains("surrogate"), call.Key + ": " + e.Message);
                }
                Assert.Equal(0, s.Info.Turns, "nothing was sent");
                Assert.Equal(1, engine.Stats.SessionsActive, "no session was created");
            }
        }

        private static void StreamLoopExceptionStops()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                string seen = null;
                Assert.Throws<InvalidOperationException>(() =>
                {
                    foreach (string piece in s.Stream("Once upon a time", Fixture.Greedy(0)))
                    {
                        seen = piece;
                        Thread.Sleep(50);  // a reply that ran ahead of the loop would grow now
                        throw new InvalidOperationException("from the loop");
                    }
                }, "a throwing loop body");
                // The reply waited for the loop body: one token, the piece the loop saw.
                Assert.Equal(1, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.Equal(StopReason.Cancelled, s.LastStats.StopReason, "stop reason");
                Assert.Equal(seen, s.Turns[1].Text, "the kept reply is what the loop saw");
                s.Send(" Then", Fixture.Greedy(4));  // the session is free again
            }
        }

        // Runs an enumerated stream whose loop body, at the first piece, lets `stop` run on
        // another thread and waits for it; fills `seen` with the pieces the loop saw and
        // returns what the loop threw.
        private static ParleyException StopEnumeratedStream(Session s, Action stop,
                                                            List<string> seen)
        {
            var firstPiece = new ManualResetEvent(false);
            var stopped = new ManualResetEvent(false);
            var stopper = new Thread(() =>
            {
                firstPiece.WaitOne();
                Thread.Sleep(50);  // a reply that ran ahead of the loop would grow now
                stop();
                stopped.Set();
            });
            stopper.Start();
            ParleyException e = Assert.ThrowsStatus(ParleyStatus.Cancelled, () =>
            {
                foreach (string piece in s.Stream("Once upon a time", Fixture.Greedy(0)))
                {
                    seen.Add(piece);
                    firstPiece.Set();
                    Assert.True(stopped.WaitOne(10000), "the other thread stopped it");
                }
            }, "a stopped enumerated stream");
            stopper.Join();
            return e;
        }

        private static void InterruptStopsEnumeratedStream()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var seen = new List<string>();
                ParleyException e = StopEnumeratedStream(s, s.Interrupt, seen);
                Assert.Equal(1, seen.Count, "no piece after the interrupt");
                Assert.Equal(1, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.Equal(StopReason.Cancelled, s.LastStats.StopReason, "stop reason");
                Assert.Equal(seen[0], e.Reply, "the exception carries what the loop saw");
                Assert.Equal(seen[0], s.Turns[1].Text, "the kept reply is what the loop saw");
            }
        }

        private static void DisposeStopsEnumeratedStream()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                var seen = new List<string>();
                ParleyException e = StopEnumeratedStream(s, s.Dispose, seen);
                Assert.Equal(1, seen.Count, "no piece after Dispose");
                Assert.Equal(1, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.Equal(seen[0], e.Reply, "the exception carries what the loop saw");
                Assert.Equal(0, engine.Stats.SessionsActive, "the session is closed");
            }
        }

        private static void DisposeEndsPausedStream()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                // Read once and kept, neither read on nor disposed: its reply waits for it.
                IEnumerator<string> pieces = s.Stream("Once upon a time", Fixture.Greedy(0))
                    .GetEnumerator();
                Assert.True(pieces.MoveNext(), "a first piece");
                s.Dispose();
                // The paused reply is stopped, and Dispose waits for it: the native session is
                // closed when it returns, not never.
                Assert.Equal(0, engine.Stats.SessionsActive, "the session is closed");
                Assert.Equal(1, s.LastStats.GeneratedTokens, "generated tokens");
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.Cancelled,
                    () => pieces.MoveNext(), "reading on after Dispose");
                Assert.Equal(pieces.Current, e.Reply, "the exception carries what was read");
                pieces.Dispose();
            }
        }

        private static void IdWhileReplyRuns()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = engine.CreateSession(new SessionOptions { Id = "shown" }))
            {
                // An id never changes: the session needs not be asked, as Info is (Busy).
                s.Stream("Once", Fixture.Greedy(2),
                         piece => Assert.Equal("shown", s.Id, "in Stream"));
                foreach (string piece in s.Stream(" upon", Fixture.Greedy(2)))
                    Assert.Equal("shown", s.Id, "in an enumerated stream");
                var started = new ManualResetEvent(false);
                var read = new ManualResetEvent(false);
                string fromThread = null;
                var reader = new Thread(() =>
                {
                    started.WaitOne();
                    fromThread = s.Id;
                    read.Set();
                });
                reader.Start();
                s.Stream(" a", Fixture.Greedy(2), piece =>
                {
                    started.Set();
                    read.WaitOne(10000);
                });
                reader.Join();
                Assert.Equal("shown", fromThread, "from another thread while a reply runs");
                using (Session fork = s.Fork("forked"))
                {
                    Assert.Equal("forked", fork.Id, "a fork's id");
                }
                using (Session generated = Fixture.RawSession(engine))
                {
                    Assert.True(generated.Id.Length > 0, "a generated id");
                    Assert.Equal(generated.Info.Id, generated.Id, "the id Info has");
                }
                s.Dispose();
                Assert.Throws<ObjectDisposedException>(() => { var unused = s.Id; },
                                                       "Id after Dispose");
            }
        }
    }
}
