// Stop strings and why a reply ended (since 0.3): the reply ends before the first stop string
// it shows, in what is streamed, returned and kept alike. Every expected text comes from an
// unstopped reply of the same greedy run.
using System;
using System.Collections.Generic;
using System.Linq;

namespace Parley.Tests
{
    internal static class StopTests
    {
        private const string Prompt = "Once upon a time";
        private const int MaxTokens = 32;

        public static void Register(TestRunner r)
        {
            r.Add("a stop string ends the reply before it, streamed and kept", StopStringEndsReply);
            r.Add("max tokens, a cancel and an absent stop string are reported", OtherStopReasons);
            r.Add("a bad stop list is InvalidArgument", BadStopListIsInvalidArgument);
        }

        private static GenerateOptions Greedy(IList<string> stop)
        {
            GenerateOptions o = Fixture.Greedy(MaxTokens);
            o.Stop = stop;
            return o;
        }

        // The unstopped greedy reply and the conversation's token ids after it.
        private static string FullReply(Engine engine, out int[] tokens)
        {
            using (Session s = Fixture.RawSession(engine))
            {
                string reply = s.Send(Prompt, Fixture.Greedy(MaxTokens));
                Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "unstopped reason");
                tokens = s.Tokens;
                return reply;
            }
        }

        // Stop strings from the reply itself: a phrase from its end, one that never occurs and
        // one from its middle (across a word boundary, so likely across tokens); and where the
        // reply must end with them: before the earliest first occurrence of any.
        private static string[] StopsFrom(string reply, out int cut, out int index)
        {
            string[] words = reply.Split(' ');
            Assert.True(words.Length >= 6, "a reply long enough to take stops from: " + reply);
            int middle = words.Length / 2;
            const string absent = "\u2603\u2603";
            Assert.True(!reply.Contains(absent), "the absent stop string is absent");
            var stop = new[]
            {
                words[words.Length - 2] + " " + words[words.Length - 1],
                absent,
                " " + words[middle] + " " + words[middle + 1],
            };
            cut = -1;
            index = -1;
            for (int i = 0; i < stop.Length; i++)
            {
                int at = reply.IndexOf(stop[i], StringComparison.Ordinal);
                // At the same place the shortest wins (the first listed of equal ones).
                bool earlier = at >= 0 && (cut < 0 || at < cut ||
                                           (at == cut && stop[i].Length < stop[index].Length));
                if (earlier)
                {
                    cut = at;
                    index = i;
                }
            }
            Assert.True(cut > 0 && cut < reply.Length, "a cut inside the reply (at " + cut + ")");
            return stop;
        }

        private static void StopStringEndsReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int[] fullTokens;
                string full = FullReply(engine, out fullTokens);
                int cut, index;
                string[] stop = StopsFrom(full, out cut, out index);
                string expected = full.Substring(0, cut);
                using (Session s = Fixture.RawSession(engine))
                {
                    var pieces = new List<string>();
                    string reply = s.Stream(Prompt, Greedy(stop), pieces.Add);
                    Assert.Equal(expected, reply, "the reply up to the stop string");
                    Assert.Equal(reply, string.Concat(pieces), "the streamed text");
                    Assert.Equal(reply, s.Turns[1].Text, "the kept turn");
                    Assert.Equal(StopReason.StopString, s.LastStats.StopReason, "stop reason");
                    Assert.Equal(index, s.LastStats.StopIndex, "stop index");
                    Assert.True(s.LastStats.GeneratedTokens < MaxTokens, "fewer tokens generated");
                    // Only the tokens that brought stop-string text alone are dropped.
                    int[] tokens = s.Tokens;
                    Assert.True(tokens.Length < fullTokens.Length, "fewer tokens kept");
                    Assert.SequenceEqual(fullTokens.Take(tokens.Length).ToArray(), tokens,
                                         "kept tokens");
                    s.Send(" Then", Fixture.Greedy(4));
                    Assert.Equal(4, s.Info.Turns, "the conversation goes on");
                }
                using (Session s = Fixture.RawSession(engine))
                {
                    string enumerated = string.Concat(s.Stream(Prompt, Greedy(stop)));
                    Assert.Equal(expected, enumerated, "enumerated");
                    Assert.Equal(StopReason.StopString, s.LastStats.StopReason, "its reason");
                    Assert.Equal(index, s.LastStats.StopIndex, "its stop index");
                }
            }
        }

        private static void OtherStopReasons()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int[] fullTokens;
                string full = FullReply(engine, out fullTokens);
                using (Session s = Fixture.RawSession(engine))
                {
                    Assert.True(!full.Contains("\u2603"), "the stop string is absent");
                    string reply = s.Send(Prompt, Greedy(new[] { "\u2603" }));
                    Assert.Equal(full, reply, "unchanged reply");
                    Assert.SequenceEqual(fullTokens, s.Tokens, "unchanged tokens");
                    Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "none shown");
                    Assert.Equal(-1, s.LastStats.StopIndex, "no stop index");
                }
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send(Prompt, Greedy(new string[0]));
                    Assert.Equal(MaxTokens, s.LastStats.GeneratedTokens, "an empty list");
                    s.Send(" Then", Fixture.Greedy(4));
                    Assert.Equal(4, s.LastStats.GeneratedTokens, "generated tokens");
                    Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "cut by max tokens");
                    Assert.Equal(-1, s.LastStats.StopIndex, "max tokens' stop index");
                    s.Stream(" More", Fixture.Greedy(0)).Take(2).ToList();
                    Assert.Equal(StopReason.Cancelled, s.LastStats.StopReason, "left early");
                    Assert.Equal(-1, s.LastStats.StopIndex, "cancel's stop index");
                }
            }
        }

        private static void BadStopListIsInvalidArgument()
        {
            var bad = new Dictionary<string, string[]>
            {
                { "an empty stop string", new[] { "" } },
                { "17 stop strings", Enumerable.Repeat("a", 17).ToArray() },
                { "a 257-byte stop string", new[] { "ok", new string('x', 257) } },
            };
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                foreach (KeyValuePair<string, string[]> c in bad)
                {
                    ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Send(Prompt, Greedy(c.Value)), c.Key);
                    Assert.True(e.Message.Contains("stop"), "the library's message: " + e.Message);
                    Assert.Equal(0, s.Info.Turns, c.Key + " adds no turn");
                }
                // What C cannot be given is refused before the call.
                Assert.Throws<ArgumentException>(() => s.Send(Prompt, Greedy(new[] { "a", null })),
                                                 "a null stop string");
                Assert.Throws<ArgumentException>(() => s.Send(Prompt, Greedy(new[] { "a\0b" })),
                                                 "a NUL in a stop string");
                s.Send(Prompt, Fixture.Greedy(4));
                Assert.Equal(2, s.Info.Turns, "the session is usable afterwards");
            }
        }
    }
}
