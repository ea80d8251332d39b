// Replies through the bindings: the same tokens as the C library's reference run, streaming in
// both forms, KV kept between turns, fork, rewind and the tokenizer.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace Parley.Tests
{
    internal static class GenerationTests
    {
        private const string Prompt = "Once upon a time";

        public static void Register(TestRunner r)
        {
            r.Add("greedy turn equals the golden token ids", GreedyTurnEqualsGolden);
            r.Add("streamed pieces concatenate to the reply", StreamedPiecesMakeTheReply);
            r.Add("enumerated pieces concatenate to the reply", EnumeratedPiecesMakeTheReply);
            r.Add("leaving the enumeration early stops the reply", LeavingEnumerationEarlyStops);
            r.Add("second turn reuses the first turn's KV", SecondTurnReusesKv);
            r.Add("a fork continues like its origin; rewind drops turns", ForkAndRewind);
            r.Add("tokenize and detokenize", TokenizeDetokenize);
            r.Add("model info", ModelInfoIsFilled);
        }

        private static string GreedyReply(Engine engine, int maxTokens)
        {
            using (Session s = Fixture.RawSession(engine)) return s.Send(Prompt, Fixture.Greedy(maxTokens));
        }

        private static void GreedyTurnEqualsGolden()
        {
            Golden golden = Golden.Load(Fixture.GoldenPath, "once_upon");
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                string reply = s.Send(Prompt, Fixture.Greedy(32));
                int[] tokens = s.Tokens;
                Assert.SequenceEqual(golden.PromptIds, tokens.Take(golden.PromptIds.Length).ToArray(), "prompt ids");
                Assert.SequenceEqual(golden.GeneratedIds.Take(32).ToArray(),
                                     tokens.Skip(golden.PromptIds.Length).ToArray(), "generated ids");
                Assert.Equal(golden.PromptIds.Length, s.LastStats.PromptTokens, "prompt tokens");
                Assert.Equal(32, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.Equal(KvSource.New, s.LastStats.KvSource, "kv source");
                // Prefill yields the first token and the last is not fed back: 31 steps of one.
                Assert.Equal(31L, engine.Stats.DecodeSteps, "decode steps");
                Assert.Equal(31L, engine.Stats.DecodeTokens, "decode tokens");
                // The reply is the text of exactly those ids, continuing the prompt.
                Assert.Equal(engine.Detokenize(tokens), engine.Detokenize(golden.PromptIds) + reply, "reply text");
                IList<Turn> turns = s.Turns;
                Assert.Equal(2, turns.Count, "turns");
                Assert.Equal(Role.User, turns[0].Role, "first turn's role");
                Assert.Equal(Prompt, turns[0].Text, "first turn's text");
                Assert.Equal(Role.Assistant, turns[1].Role, "second turn's role");
                Assert.Equal(reply, turns[1].Text, "second turn's text");
            }
        }

        private static void StreamedPiecesMakeTheReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var pieces = new List<string>();
                string reply = s.Stream(Prompt, Fixture.Greedy(32), pieces.Add);
                Assert.True(pieces.Count > 1, "several pieces");
                Assert.Equal(reply, string.Concat(pieces), "pieces joined");
                Assert.Equal(GreedyReply(engine, 32), reply, "streamed reply == sent reply");
            }
        }

        private static void EnumeratedPiecesMakeTheReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var pieces = s.Stream(Prompt, Fixture.Greedy(32)).ToList();
                Assert.True(pieces.Count > 1, "several pieces");
                Assert.Equal(GreedyReply(engine, 32), string.Concat(pieces), "enumerated reply == sent reply");
                Assert.Equal(32, s.LastStats.GeneratedTokens, "generated tokens");
            }
        }

        private static void LeavingEnumerationEarlyStops()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var taken = new List<string>();
                foreach (string piece in s.Stream(Prompt, Fixture.Greedy(0)))
                {
                    taken.Add(piece);
                    Thread.Sleep(20);  // a reply that ran ahead of the loop would grow now
                    if (taken.Count == 3) break;
                }
                Assert.Equal(3, taken.Count, "pieces taken");
                // The worker has finished: the session is free again, and the reply stopped at
                // the last piece taken (it waits for the loop, never runs ahead of it).
                IList<Turn> turns = s.Turns;
                Assert.Equal(2, turns.Count, "turns after the early stop");
                Assert.Equal(string.Concat(taken), turns[1].Text, "the kept reply is the pieces");
                Assert.Equal(3, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.Equal(StopReason.Cancelled, s.LastStats.StopReason, "stop reason");
                s.Send(" Then", Fixture.Greedy(4));
                Assert.Equal(4, s.Info.Turns, "turns after one more send");
            }
        }

        private static void SecondTurnReusesKv()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send(Prompt, Fixture.Greedy(8));
                int afterFirst = s.Info.Tokens;
                s.Send(" The end.", Fixture.Greedy(8));
                TurnStats stats = s.LastStats;
                Assert.True(stats.ReusedTokens > 0, "reused tokens > 0 (got " + stats.ReusedTokens + ")");
                Assert.True(stats.ReusedTokens >= afterFirst - 1, "the whole first turn is reused");
                Assert.Equal(KvSource.Resident, stats.KvSource, "kv source");
            }
        }

        private static void ForkAndRewind()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send(Prompt, Fixture.Greedy(8));
                using (Session copy = s.Fork("cs-fork"))
                {
                    Assert.Equal("cs-fork", copy.Id, "fork id");
                    Assert.Equal(s.Send(" Then", Fixture.Greedy(8)), copy.Send(" Then", Fixture.Greedy(8)), "same continuation");
                }
                Assert.Equal(4, s.Info.Turns, "turns before rewind");
                s.Rewind(2);
                Assert.Equal(2, s.Info.Turns, "turns after rewind");
                Assert.ThrowsStatus(ParleyStatus.InvalidArgument, () => s.Rewind(3), "rewinding past the start");
            }
        }

        private static void TokenizeDetokenize()
        {
            Golden golden = Golden.Load(Fixture.GoldenPath, "once_upon");
            using (Engine engine = Fixture.OpenEngine())
            {
                Assert.SequenceEqual(golden.PromptIds, engine.Tokenize(Prompt, addBos: true), "tokenize");
                int[] ids = engine.Tokenize("Lily saw a big, red ball.");
                Assert.Equal("Lily saw a big, red ball.", engine.Detokenize(ids), "round trip");
                Assert.Equal(0, engine.Tokenize("").Length, "empty text");
            }
        }

        private static void ModelInfoIsFilled()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                ModelInfo m = engine.ModelInfo;
                Assert.Equal("llama", m.Architecture, "architecture");
                Assert.Equal(512, m.VocabSize, "vocabulary");
                Assert.True(m.ContextLength > 0 && m.Layers > 0 && m.Parameters > 0, "sizes are filled");
                Assert.Equal("cpu", m.Backend, "backend");
            }
        }
    }
}
