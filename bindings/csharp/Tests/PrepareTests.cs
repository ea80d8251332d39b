// Session.Prepare (since 0.5): the work the next turn would begin with, done ahead of it. A
// new conversation computes its opening, a stored one gets its KV back; replies are the same
// with or without it.
using System;

namespace Parley.Tests
{
    internal static class PrepareTests
    {
        // Long enough for the opening to fill at least one whole block of 16 tokens.
        private const string SystemPrompt = "You are a storyteller who tells short, kind stories"
            + " about the animals that live in a big green forest.";
        private static readonly string[] Messages = { "Tell me a story.", "And then?" };
        private const int Block = 16;  // tokens per KV block: the opening is held in whole blocks

        public static void Register(TestRunner r)
        {
            r.Add("Prepare computes a new conversation's opening for its first turn (raw, chatml)",
                  OpeningIsComputedForTheFirstTurn);
            r.Add("Prepare has nothing left to do in a conversation under way", NothingLeft);
            r.Add("Prepare brings a reopened session's KV back before its turn",
                  ReopenedSessionIsRestored);
            r.Add("Prepare brings a suspended session's KV back", SuspendedSessionIsRestored);
            r.Add("Prepare from the session's own handler is Busy", ReentrantPrepareIsBusy);
            r.Add("Prepare on a disposed session throws", DisposedSessionThrows);
        }

        private static Session ChatSession(Engine engine, string template, string scope,
                                           string id = null)
        {
            return engine.CreateSession(new SessionOptions
            {
                Id = id, SystemPrompt = SystemPrompt, ChatTemplate = template, CacheScope = scope,
            });
        }

        private static void AssertNoReply(TurnStats stats, string what)
        {
            Assert.Equal(0, stats.PromptTokens, what + ": prompt tokens");
            Assert.Equal(0, stats.GeneratedTokens, what + ": generated tokens");
            Assert.Equal(0.0, stats.TtftMs, what + ": time to the first token");
            Assert.Equal(StopReason.None, stats.StopReason, what + ": stop reason");
            Assert.Equal(-1, stats.StopIndex, what + ": stop index");
        }

        private static void OpeningIsComputedForTheFirstTurn()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                foreach (string template in new[] { "raw", "chatml" })
                {
                    string what = " (" + template + ")";
                    string reply;
                    int[] tokens;
                    using (Session s = ChatSession(engine, template, "prepared"))
                    {
                        TurnStats stats = s.Prepare();
                        AssertNoReply(stats, "the first Prepare" + what);
                        Assert.Equal(KvSource.New, stats.KvSource, "kv source" + what);
                        Assert.True(stats.ComputedTokens > 0 && stats.ComputedTokens % Block == 0,
                                    "whole blocks computed" + what + ", got "
                                    + stats.ComputedTokens);
                        Assert.Equal(0.0, stats.RestoreMs, "restore time" + what);
                        Assert.True(s.LastStats == null, "Prepare replies nothing" + what);

                        TurnStats again = s.Prepare();
                        AssertNoReply(again, "the second Prepare" + what);
                        Assert.Equal(0, again.ComputedTokens, "computed again" + what);

                        reply = s.Send(Messages[0], Fixture.Greedy(32));
                        Assert.True(s.LastStats.ReusedTokens >= stats.ComputedTokens,
                                    "the send reuses the opening" + what);
                        tokens = s.Tokens;
                    }
                    // Another scope shares no KV with it: this one computes everything itself.
                    using (Session plain = ChatSession(engine, template, "unprepared"))
                    {
                        Assert.Equal(reply, plain.Send(Messages[0], Fixture.Greedy(32)),
                                     "the reply without Prepare" + what);
                        Assert.Equal(0, plain.LastStats.ReusedTokens, "nothing reused" + what);
                        Assert.SequenceEqual(tokens, plain.Tokens, "the tokens" + what);
                    }
                }
            }
        }

        private static void NothingLeft()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = ChatSession(engine, "raw", null))
            {
                s.Send(Messages[0], Fixture.Greedy(16));
                TurnStats last = s.LastStats;
                TurnStats stats = s.Prepare();
                AssertNoReply(stats, "Prepare after a turn");
                Assert.Equal(KvSource.Resident, stats.KvSource, "kv source");
                Assert.Equal(0, stats.ComputedTokens, "computed tokens");
                Assert.True(stats.ReusedTokens > 0, "the conversation's KV is there");
                Assert.True(ReferenceEquals(last, s.LastStats), "LastStats kept");
            }
        }

        private static void ReopenedSessionIsRestored()
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = Fixture.OpenEngine(store))
                using (Session s = ChatSession(engine, "raw", null, "cs-prepare"))
                {
                    s.Send(Messages[0], Fixture.Greedy(16));
                }

                string reply;
                int[] tokens;
                using (Engine engine = Fixture.OpenEngine(store))
                using (Session s = engine.OpenSession("cs-prepare"))
                {
                    Assert.Equal(SessionState.Spilled, s.Info.State, "state when reopened");
                    TurnStats stats = s.Prepare();
                    AssertNoReply(stats, "Prepare after reopening");
                    Assert.Equal(KvSource.Restored, stats.KvSource, "KV came back from the store");
                    Assert.True(stats.RestoreMs >= 0, "restore time");
                    // All but the last token: the next turn computes that one with its message.
                    Assert.Equal(s.Info.Tokens - 1, stats.ReusedTokens + stats.ComputedTokens,
                                 "tokens with KV");
                    Assert.Equal(SessionState.Active, s.Info.State, "state after Prepare");

                    reply = s.Send(Messages[1], Fixture.Greedy(16));
                    Assert.Equal(KvSource.Resident, s.LastStats.KvSource, "the send's kv source");
                    Assert.Equal(0.0, s.LastStats.RestoreMs, "the send restores nothing");
                    tokens = s.Tokens;
                }

                // The same as a conversation that never left memory.
                using (Engine engine = Fixture.OpenEngine())
                using (Session s = ChatSession(engine, "raw", null))
                {
                    s.Send(Messages[0], Fixture.Greedy(16));
                    Assert.Equal(reply, s.Send(Messages[1], Fixture.Greedy(16)), "the reply");
                    Assert.SequenceEqual(tokens, s.Tokens, "the tokens");
                }
            });
        }

        private static void SuspendedSessionIsRestored()
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = Fixture.OpenEngine(store))
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send("Once upon a time", Fixture.Greedy(8));
                    s.Suspend();
                    Assert.Equal(0L, s.Info.KvBytesResident, "no KV in memory");
                    Assert.Equal(KvSource.Restored, s.Prepare().KvSource, "kv source");
                    Assert.True(s.Info.KvBytesResident > 0, "the KV is in memory again");
                    s.Send(" Then", Fixture.Greedy(4));
                    Assert.Equal(KvSource.Resident, s.LastStats.KvSource, "the send's kv source");
                    Assert.Equal(0.0, s.LastStats.RestoreMs, "the send restores nothing");
                }
            });
        }

        private static void ReentrantPrepareIsBusy()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.ThrowsStatus(ParleyStatus.Busy,
                    () => s.Stream("Once", Fixture.Greedy(8), piece => s.Prepare()),
                    "Prepare from inside the session's handler");
            }
        }

        private static void DisposedSessionThrows()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = ChatSession(engine, "raw", null);
                s.Dispose();
                Assert.Throws<ObjectDisposedException>(() => s.Prepare(), "Prepare after Dispose");
            }
        }
    }
}
