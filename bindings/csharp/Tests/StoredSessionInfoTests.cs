// Engine.GetStoredSessionInfo (since 0.4): a stored conversation's dates and size, read
// without opening it.
using System;
using System.IO;

namespace Parley.Tests
{
    internal static class StoredSessionInfoTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("a stored session's info while it is open", OpenSession);
            r.Add("stored turns count the system prompt", SystemPromptCounted);
            r.Add("a closed session's info keeps its stored KV", ClosedSession);
            r.Add("stored info is the same in a new engine", NewEngine);
            r.Add("stored info of an unknown id is NotFound", UnknownId);
            r.Add("stored info without a store is NotFound", NoStore);
            r.Add("stored info of an empty id is InvalidArgument; a null one is refused",
                  EmptyId);
        }

        private static long NowMs()
        {
            var epoch = new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc);
            return (long)(DateTime.UtcNow - epoch).TotalMilliseconds;
        }

        // Runs `test` on an engine with a store in a fresh temp dir, removed afterwards.
        private static void WithStore(Action<Engine, string> test)
        {
            string dir = Fixture.NewTempDir();
            try
            {
                string store = Path.Combine(dir, "chats.sqlite");
                using (Engine engine = Fixture.OpenEngine(store)) test(engine, store);
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        private static void OpenSession()
        {
            WithStore((engine, store) =>
            {
                long before = NowMs();
                StoredSessionInfo info;
                using (Session s = Fixture.RawSession(engine, "cs-info"))
                {
                    s.Send("Once upon a time", Fixture.Greedy(8));
                    info = engine.GetStoredSessionInfo("cs-info");
                }
                long after = NowMs();
                Assert.Equal(2, info.Turns, "the user's message and the reply");
                Assert.True(info.IsOpen, "open in this engine");
                Assert.True(info.SameModel, "stored with this engine's model");
                // A little slack: the library reads its own clock.
                Assert.True(before - 1000 <= info.CreatedUnixMs, "created after the test began");
                Assert.True(info.CreatedUnixMs <= info.UpdatedUnixMs, "created before updated");
                Assert.True(info.UpdatedUnixMs <= after + 1000, "updated before the test ended");
            });
        }

        private static void SystemPromptCounted()
        {
            WithStore((engine, store) =>
            {
                var options = new SessionOptions { Id = "cs-info", SystemPrompt = "Tell stories." };
                using (Session s = engine.CreateSession(options))
                    s.Send("Once upon a time", Fixture.Greedy(8));
                Assert.Equal(3, engine.GetStoredSessionInfo("cs-info").Turns, "stored turns");
            });
        }

        private static void ClosedSession()
        {
            WithStore((engine, store) =>
            {
                using (Session s = Fixture.RawSession(engine, "cs-info"))
                    s.Send("Once upon a time", Fixture.Greedy(8));
                StoredSessionInfo info = engine.GetStoredSessionInfo("cs-info");
                Assert.True(!info.IsOpen, "not open after Dispose");
                Assert.True(info.KvBytesStored > 0, "its KV is stored");
                Assert.Equal(2, info.Turns, "stored turns");
                Assert.True(info.SameModel, "stored with this engine's model");
            });
        }

        private static void NewEngine()
        {
            WithStore((engine, store) =>
            {
                using (Session s = Fixture.RawSession(engine, "cs-info"))
                    s.Send("Once upon a time", Fixture.Greedy(8));
                StoredSessionInfo first = engine.GetStoredSessionInfo("cs-info");
                using (Engine again = Fixture.OpenEngine(store))
                {
                    StoredSessionInfo info = again.GetStoredSessionInfo("cs-info");
                    Assert.Equal(first.CreatedUnixMs, info.CreatedUnixMs, "created");
                    Assert.Equal(first.UpdatedUnixMs, info.UpdatedUnixMs, "updated");
                    Assert.Equal(first.Turns, info.Turns, "turns");
                    Assert.Equal(first.KvBytesStored, info.KvBytesStored, "stored KV bytes");
                    Assert.True(!info.IsOpen, "not open in the new engine");
                }
            });
        }

        private static void UnknownId()
        {
            WithStore((engine, store) => Assert.ThrowsStatus(ParleyStatus.NotFound,
                () => engine.GetStoredSessionInfo("no-such-id"), "an unknown id"));
        }

        private static void NoStore()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine, "cs-info"))
            {
                s.Send("Once", Fixture.Greedy(2));
                Assert.ThrowsStatus(ParleyStatus.NotFound,
                    () => engine.GetStoredSessionInfo("cs-info"), "no store");
            }
        }

        private static void EmptyId()
        {
            WithStore((engine, store) =>
            {
                Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => engine.GetStoredSessionInfo(""), "an empty id");
                var e = Assert.Throws<ArgumentNullException>(
                    () => engine.GetStoredSessionInfo(null), "a null id");
                Assert.Equal("id", e.ParamName, "the parameter named");
                Assert.Throws<ArgumentException>(
                    () => engine.GetStoredSessionInfo("a\0b"), "an id with a NUL");
            });
        }
    }
}
