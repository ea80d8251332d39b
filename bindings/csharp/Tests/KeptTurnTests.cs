// Errors after which the session keeps the turn (the KV budget running out during the reply, a
// store that does not take the turn): the exception carries the kept reply as Reply, and
// LastStats describes the turn, as for a reply Interrupt stopped.
using System.Collections.Generic;
using System.Text;

namespace Parley.Tests
{
    internal static class KeptTurnTests
    {
        private const string Prompt = "Once upon a time";
        private const int Blocks = 4;  // a KV budget of 4 blocks (64 tokens) ends long replies

        public static void Register(TestRunner r)
        {
            r.Add("a send out of KV budget mid-reply keeps the reply", SendOutOfBudgetKeepsReply);
            r.Add("an enumerated reply out of KV budget keeps the reply",
                  EnumeratedOutOfBudgetKeepsReply);
            r.Add("a continuation out of KV budget keeps the new text",
                  ContinueOutOfBudgetKeepsText);
            r.Add("out of KV budget before the reply keeps nothing", OutOfBudgetBeforeReply);
            r.Add("a turn the store refuses is kept with its reply", StoreRefusalKeepsReply);
        }

        // Up to the context's end: far past the budget.
        private static GenerateOptions Long()
        {
            return Fixture.Greedy(0);
        }

        private static Engine OpenEngine(int blocks)
        {
            long perToken;
            using (Engine probe = Fixture.OpenEngine()) perToken = probe.Stats.KvBytesPerToken;
            return new Engine(Fixture.ModelPath, new EngineOptions
            {
                Device = "cpu",
                KvType = KvType.F32,
                Threads = 2,
                KvBudgetBytes = blocks * 16 * perToken,
            });
        }

        private static Turn LastTurn(Session s)
        {
            IList<Turn> turns = s.Turns;
            return turns[turns.Count - 1];
        }

        private static void SendOutOfBudgetKeepsReply()
        {
            using (Engine engine = OpenEngine(Blocks))
            using (Session s = Fixture.RawSession(engine))
            {
                var streamed = new StringBuilder();
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.OutOfMemory,
                    () => s.Stream(Prompt, Long(), piece => streamed.Append(piece)),
                    "a reply past the KV budget");
                Assert.True(!string.IsNullOrEmpty(e.Reply), "the exception carries the reply");
                Assert.Equal(streamed.ToString(), e.Reply, "the reply is what was streamed");
                Assert.Equal(Role.Assistant, LastTurn(s).Role, "the last turn's role");
                Assert.Equal(e.Reply, LastTurn(s).Text, "the reply is kept as the turn");
                Assert.True(s.LastStats != null, "LastStats describes the kept turn");
                Assert.Equal(StopReason.OutOfMemory, s.LastStats.StopReason, "stop reason");
                Assert.True(s.LastStats.PromptTokens > 0, "prompt tokens");
                int generated = s.LastStats.GeneratedTokens;
                Assert.True(generated > 0 && generated < Blocks * 16,
                            "generated within the budget (" + generated + ")");
            }
        }

        private static void EnumeratedOutOfBudgetKeepsReply()
        {
            using (Engine engine = OpenEngine(Blocks))
            using (Session s = Fixture.RawSession(engine))
            {
                var pieces = new List<string>();
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.OutOfMemory, () =>
                {
                    foreach (string piece in s.Stream(Prompt, Long())) pieces.Add(piece);
                }, "an enumerated reply past the KV budget");
                Assert.True(!string.IsNullOrEmpty(e.Reply), "the exception carries the reply");
                Assert.Equal(string.Concat(pieces), e.Reply, "the reply is what was enumerated");
                Assert.Equal(e.Reply, LastTurn(s).Text, "the reply is kept as the turn");
                Assert.True(s.LastStats != null, "LastStats describes the kept turn");
                Assert.Equal(StopReason.OutOfMemory, s.LastStats.StopReason, "stop reason");
            }
        }

        private static void ContinueOutOfBudgetKeepsText()
        {
            using (Engine engine = OpenEngine(Blocks))
            using (Session s = Fixture.RawSession(engine))
            {
                string first = s.Send(Prompt, Fixture.Greedy(4));
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.OutOfMemory,
                    () => s.Continue(Long()), "a continuation past the KV budget");
                Assert.True(!string.IsNullOrEmpty(e.Reply), "the exception carries the new text");
                Assert.Equal(first + e.Reply, LastTurn(s).Text, "the new text is appended");
                Assert.Equal(StopReason.OutOfMemory, s.LastStats.StopReason, "stop reason");
                Assert.Equal(0, s.LastStats.PromptTokens, "prompt tokens");
                Assert.True(s.LastStats.GeneratedTokens > 0, "generated tokens");
            }
        }

        private static void OutOfBudgetBeforeReply()
        {
            using (Engine engine = OpenEngine(1))
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send("Once", Fixture.Greedy(2));
                TurnStats before = s.LastStats;
                int turns = s.Info.Turns;
                // Far more tokens than the one block of the budget holds.
                var prompt = new StringBuilder();
                for (int i = 0; i < 8; i++) prompt.Append(" and the dog ran to the park");
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.OutOfMemory,
                    () => s.Send(prompt.ToString(), Long()), "a prompt past the KV budget");
                Assert.True(e.Reply == null, "no reply, got \"" + e.Reply + "\"");
                Assert.True(ReferenceEquals(before, s.LastStats), "LastStats as it was");
                Assert.Equal(turns, s.Info.Turns, "no turn added");
            }
        }

        private static void StoreRefusalKeepsReply()
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine e1 = Fixture.OpenEngine(store))
                using (Engine e2 = Fixture.OpenEngine(store))
                {
                    using (Session first = Fixture.RawSession(e1, "shared"))
                        first.Send(Prompt, Fixture.Greedy(8));
                    using (Session a = e1.OpenSession("shared"))
                    using (Session b = e2.OpenSession("shared"))
                    {
                        a.Send(" A", Fixture.Greedy(8));  // b's copy is out of date now
                        ParleyException e = Assert.ThrowsStatus(ParleyStatus.Storage,
                            () => b.Send(" B", Fixture.Greedy(8)), "a send on the stale copy");
                        Assert.True(!string.IsNullOrEmpty(e.Reply),
                                    "the exception carries the reply");
                        IList<Turn> turns = b.Turns;
                        Assert.Equal(" B", turns[turns.Count - 2].Text, "the message is kept");
                        Assert.Equal(Role.Assistant, turns[turns.Count - 1].Role, "reply's role");
                        Assert.Equal(e.Reply, turns[turns.Count - 1].Text, "the reply is kept");
                        Assert.True(b.LastStats != null, "LastStats describes the kept turn");
                        Assert.Equal(8, b.LastStats.GeneratedTokens, "generated tokens");
                        Assert.Equal(StopReason.MaxTokens, b.LastStats.StopReason, "stop reason");
                    }
                }
            });
        }
    }
}
