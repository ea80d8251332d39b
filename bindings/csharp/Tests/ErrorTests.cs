// Failures surface as ParleyException with the C status and message, or as the .NET exception
// a .NET caller expects (disposed objects, bad arguments, the caller's own exceptions).
using System;
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
    }
}
