// Session.EndIds (since 0.9): the ids that end a session's replies, for banning with
// GenerateOptions.LogitBias. They depend on the model and the session's template.
using System;
using System.Linq;

namespace Parley.Tests
{
    internal static class EndIdsTests
    {
        private const int Bos = 1, Eos = 2;  // stories260k's
        // A prompt the greedy raw reply of stories260k ends by itself, after about 150 tokens.
        private const string EndingPrompt = "The cat sat on the mat.";
        private const int RoomToEnd = 200;

        public static void Register(TestRunner r)
        {
            r.Add("EndIds: raw ends on BOS and EOS, ascending", RawEndsOnBosAndEos);
            r.Add("EndIds: chatml without its marker in the vocabulary ends on EOS",
                  ChatmlEndsOnEos);
            r.Add("EndIds: banning them all makes a reply run to MaxTokens", BanningRunsToMax);
            r.Add("EndIds on a disposed session throws", DisposedSessionThrows);
        }

        private static void RawEndsOnBosAndEos()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.SequenceEqual(new[] { Bos, Eos }, s.EndIds, "raw's end ids");
            }
        }

        private static void ChatmlEndsOnEos()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = engine.CreateSession(new SessionOptions { ChatTemplate = "chatml" }))
            {
                Assert.True(engine.Tokenize("<|im_end|>").Length > 1,
                            "<|im_end|> is text to this model");
                Assert.SequenceEqual(new[] { Eos }, s.EndIds, "chatml's end ids");
            }
        }

        private static TurnStats ReplyBanning(Engine engine, int[] banned)
        {
            GenerateOptions o = Fixture.Greedy(RoomToEnd);
            o.IgnoreEos = false;
            o.LogitBias = banned.ToDictionary(id => id, id => float.NegativeInfinity);
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send(EndingPrompt, o);
                return s.LastStats;
            }
        }

        private static void BanningRunsToMax()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                TurnStats free = ReplyBanning(engine, new int[0]);
                Assert.Equal(StopReason.EndToken, free.StopReason, "unbanned, the model ends it");
                Assert.True(free.GeneratedTokens < RoomToEnd, "it ends before MaxTokens");
                int[] endIds;
                using (Session s = Fixture.RawSession(engine)) endIds = s.EndIds;
                TurnStats banned = ReplyBanning(engine, endIds);
                Assert.Equal(StopReason.MaxTokens, banned.StopReason, "banned, it runs on");
                Assert.Equal(RoomToEnd, banned.GeneratedTokens, "generated tokens");
            }
        }

        private static void DisposedSessionThrows()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                s.Dispose();
                Assert.Throws<ObjectDisposedException>(() => s.EndIds.ToString(),
                                                      "a disposed session");
            }
        }
    }
}
