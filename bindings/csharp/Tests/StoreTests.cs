// Conversations in a store file outlive the engine: list, reopen, resume, suspend, delete.
using System;
using System.IO;

namespace Parley.Tests
{
    internal static class StoreTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("store round trip in a temp dir", StoreRoundTrip);
            r.Add("suspend spills the KV and the next send restores it", SuspendAndRestore);
            r.Add("an engine without a store lists nothing and cannot suspend", NoStore);
            r.Add("a null id is refused by OpenSession and DeleteSession", NullIdIsRefused);
        }

        private static void StoreRoundTrip()
        {
            string dir = Fixture.NewTempDir();
            try
            {
                string store = Path.Combine(dir, "chats.sqlite");
                string firstReply;
                using (Engine engine = Fixture.OpenEngine(store))
                using (Session s = Fixture.RawSession(engine, "cs-story"))
                {
                    firstReply = s.Send("Once upon a time", Fixture.Greedy(8));
                }
                Assert.True(File.Exists(store), "the store file exists");

                using (Engine engine = Fixture.OpenEngine(store))
                {
                    Assert.Equal("cs-story", string.Join(",", engine.Sessions), "stored ids");
                    using (Session s = engine.OpenSession("cs-story"))
                    {
                        var turns = s.Turns;
                        Assert.Equal(2, turns.Count, "stored turns");
                        Assert.Equal("Once upon a time", turns[0].Text, "stored user text");
                        Assert.Equal(firstReply, turns[1].Text, "stored reply");
                        s.Send(" Then", Fixture.Greedy(4));
                        Assert.Equal(KvSource.Restored, s.LastStats.KvSource, "KV came back from the store");
                        Assert.True(s.LastStats.ReusedTokens > 0, "restored KV is reused");
                    }
                    Assert.ThrowsStatus(ParleyStatus.NotFound, () => engine.OpenSession("no-such-id"), "opening an unknown id");
                    engine.DeleteSession("cs-story");
                    Assert.Equal(0, engine.Sessions.Length, "nothing stored after delete");
                    Assert.ThrowsStatus(ParleyStatus.NotFound, () => engine.DeleteSession("cs-story"), "deleting twice");
                }
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        private static void SuspendAndRestore()
        {
            string dir = Fixture.NewTempDir();
            try
            {
                using (Engine engine = Fixture.OpenEngine(Path.Combine(dir, "chats.sqlite")))
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send("Once upon a time", Fixture.Greedy(8));
                    s.Suspend();
                    Assert.Equal(SessionState.Spilled, s.Info.State, "state after suspend");
                    Assert.Equal(0L, s.Info.KvBytesResident, "no KV in memory");
                    Assert.Equal(1, engine.Stats.SessionsSpilled, "engine counts it spilled");
                    s.Send(" Then", Fixture.Greedy(4));
                    Assert.Equal(KvSource.Restored, s.LastStats.KvSource, "kv source after suspend");
                    Assert.Equal(SessionState.Active, s.Info.State, "state after the send");
                    Assert.Equal(s.Id, string.Join(",", engine.Sessions), "the store lists the session");
                }
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        private static void NoStore()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.Equal(0, engine.Sessions.Length, "no stored sessions");
                s.Send("Once", Fixture.Greedy(2));
                Assert.ThrowsStatus(ParleyStatus.Unsupported, () => s.Suspend(), "suspend without a store");
            }
        }

        private static void NullIdIsRefused()
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = Fixture.OpenEngine(store))
                {
                    using (Session s = Fixture.RawSession(engine, "cs-kept"))
                        s.Send("Once", Fixture.Greedy(2));
                    var e = Assert.Throws<ArgumentNullException>(() => engine.OpenSession(null),
                                                                 "OpenSession(null)");
                    Assert.Equal("id", e.ParamName, "OpenSession: the parameter named");
                    e = Assert.Throws<ArgumentNullException>(() => engine.DeleteSession(null),
                                                             "DeleteSession(null)");
                    Assert.Equal("id", e.ParamName, "DeleteSession: the parameter named");
                    Assert.Equal("cs-kept", string.Join(",", engine.Sessions), "nothing deleted");
                }
            });
        }
    }
}
