// Session.ScoreReplies (since 0.5): how likely the model finds each of several replies to a
// message, without generating and without changing the conversation; with a null message
// (since 0.6), of what Continue would generate.
using System;
using System.Collections.Generic;
using System.Text;

namespace Parley.Tests
{
    internal static class ScoreRepliesTests
    {
        private const string Message = "Once upon a time,";
        private static readonly string[] Replies =
        {
            "there was a little girl named Lily.", "girl little Lily a there named was.",
        };

        public static void Register(TestRunner r)
        {
            r.Add("ScoreReplies scores a likely reply higher than a jumbled one", LikelyIsHigher);
            r.Add("ScoreReplies withEnd adds the end's token", EndAddsItsToken);
            r.Add("ScoreReplies of an empty reply is its end alone", EmptyReplyIsItsEndAlone);
            r.Add("ScoreReplies changes nothing", ScoringChangesNothing);
            r.Add("ScoreReplies one at a time is the same as all at once", OneAtATime);
            r.Add("ScoreReplies on a suspended session scores as before", SuspendedSession);
            r.Add("ScoreReplies of no replies or too many is InvalidArgument", HowManyReplies);
            r.Add("ScoreReplies refuses a lone surrogate", LoneSurrogateIsRefused);
            r.Add("null replies or a NUL is refused by ScoreReplies", BadTextIsRefused);
            r.Add("ScoreReplies of a null message scores the reply a rewind dropped",
                  NullMessageScoresRewoundReply);
            r.Add("ScoreReplies of a null message with nothing to go on from is InvalidArgument",
                  NullMessageWithNothingToGoOnFromFails);
            r.Add("a reply that does not fit is ContextFull and leaves nothing",
                  HugeReplyDoesNotFit);
            r.Add("ScoreReplies from the session's own handler is Busy", ReentrantScoreIsBusy);
            r.Add("ScoreReplies on a disposed session throws", DisposedSessionThrows);
        }

        // What ScoreReplies must leave as it is.
        private static string Snapshot(Session s)
        {
            var text = new StringBuilder();
            text.Append(string.Join(",", s.Tokens)).Append('|').Append(s.Info.Tokens);
            foreach (Turn t in s.Turns) text.Append('|').Append(t.Role).Append(':').Append(t.Text);
            return text.ToString();
        }

        private static void AssertSameScores(ReplyScore[] expected, ReplyScore[] actual,
                                             string what)
        {
            Assert.Equal(expected.Length, actual.Length, what + " (length)");
            for (int i = 0; i < expected.Length; i++)
            {
                // Exactly equal, not merely close.
                Assert.Equal(expected[i].LogProb, actual[i].LogProb, what + " [" + i + "] logprob");
                Assert.Equal(expected[i].TokenCount, actual[i].TokenCount,
                             what + " [" + i + "] tokens");
            }
        }

        private static void LikelyIsHigher()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                ReplyScore[] scores = s.ScoreReplies(Message, Replies);
                Assert.Equal(2, scores.Length, "one score a reply");
                for (int i = 0; i < 2; i++)
                {
                    Assert.Equal(Replies[i], scores[i].Text, "in the order given [" + i + "]");
                    Assert.True(scores[i].LogProb < 0, "logprob < 0, got " + scores[i].LogProb);
                    Assert.True(scores[i].TokenCount > 1,
                                "tokens > 1, got " + scores[i].TokenCount);
                }
                Assert.True(scores[0].LogProb > scores[1].LogProb + 10,
                            "the likely reply by more than 10, got " + scores[0].LogProb + " and "
                            + scores[1].LogProb);
            }
        }

        private static void EndAddsItsToken()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                ReplyScore[] without = s.ScoreReplies(Message, Replies);
                ReplyScore[] withEnd = s.ScoreReplies(Message, Replies, true);
                for (int i = 0; i < Replies.Length; i++)
                {
                    // EOS ends a "raw" reply.
                    Assert.Equal(without[i].TokenCount + 1, withEnd[i].TokenCount,
                                 "tokens with the end [" + i + "]");
                    Assert.True(withEnd[i].LogProb < without[i].LogProb,
                                "the end costs something [" + i + "]");
                }
            }
        }

        private static void EmptyReplyIsItsEndAlone()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                ReplyScore empty = s.ScoreReplies(Message, new[] { "" })[0];
                Assert.Equal(0.0, empty.LogProb, "logprob of nothing");
                Assert.Equal(0, empty.TokenCount, "tokens of nothing");
                ReplyScore end = s.ScoreReplies(Message, new[] { "" }, true)[0];
                Assert.Equal(1, end.TokenCount, "the end's token");
                Assert.True(end.LogProb < 0, "the end costs something");
            }
        }

        private static void ScoringChangesNothing()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            using (Session unscored = Fixture.RawSession(engine))
            {
                s.Send("The little dog", Fixture.Greedy(16));
                string before = Snapshot(s);
                int tokens = s.Info.Tokens;
                TurnStats stats = s.LastStats;
                ReplyScore[] first = s.ScoreReplies(Message, Replies);
                AssertSameScores(first, s.ScoreReplies(Message, Replies), "the same again");
                Assert.Equal(tokens, s.Info.Tokens, "the session's token count");
                Assert.Equal(before, Snapshot(s), "tokens and turns");
                Assert.True(ReferenceEquals(stats, s.LastStats), "LastStats kept");
                // The next send goes as in a session that never scored.
                string reply = s.Send(Message, Fixture.Greedy(16));
                unscored.Send("The little dog", Fixture.Greedy(16));
                Assert.Equal(unscored.Send(Message, Fixture.Greedy(16)), reply, "the reply");
                Assert.SequenceEqual(unscored.Tokens, s.Tokens, "the tokens");
            }
        }

        private static void OneAtATime()
        {
            var replies = new List<string>(Replies) { "", "she had a big red ball." };
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                foreach (bool withEnd in new[] { false, true })
                {
                    ReplyScore[] together = s.ScoreReplies(Message, replies, withEnd);
                    var alone = new ReplyScore[replies.Count];
                    for (int i = 0; i < replies.Count; i++)
                        alone[i] = s.ScoreReplies(Message, new[] { replies[i] }, withEnd)[0];
                    AssertSameScores(together, alone, "withEnd " + withEnd);
                }
            }
        }

        private static void SuspendedSession()
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = Fixture.OpenEngine(store))
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send("The little dog", Fixture.Greedy(16));
                    ReplyScore[] expected = s.ScoreReplies(Message, Replies);
                    s.Suspend();
                    Assert.Equal(0L, s.Info.KvBytesResident, "no KV in memory");
                    AssertSameScores(expected, s.ScoreReplies(Message, Replies), "after Suspend");
                }
            });
        }

        private static void HowManyReplies()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var tooMany = new string[257];
                for (int i = 0; i < tooMany.Length; i++) tooMany[i] = "";
                var cases = new Dictionary<string, string[]>
                {
                    { "no replies", new string[0] },
                    { "257 replies", tooMany },
                };
                foreach (KeyValuePair<string, string[]> c in cases)
                {
                    ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.ScoreReplies(Message, c.Value), c.Key);
                    Assert.True(e.Message.Contains("n_replies"),
                                c.Key + ": the library says how many, got " + e.Message);
                }
                Assert.Equal(0, s.Info.Tokens, "no tokens");
            }
        }

        private static void LoneSurrogateIsRefused()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                // UTF-8 cannot carry a lone surrogate: refused, as by Send, not scored as the
                // U+FFFD it would become.
                var e = Assert.Throws<ArgumentException>(
                    () => s.ScoreReplies("a\ud800b", new[] { "c" }), "in the message");
                Assert.Equal("message", e.ParamName, "the message named");
                e = Assert.Throws<ArgumentException>(
                    () => s.ScoreReplies("a", new[] { "c", "c\udc00d" }), "in a reply");
                Assert.Equal("replies", e.ParamName, "the replies named");
                Assert.True(s.ScoreReplies("a\ufffdb", new[] { "c\ufffdd" })[0].TokenCount > 0,
                            "U+FFFD itself is text");
            }
        }

        private static void BadTextIsRefused()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                // A null message is no error here: it scores continuations (see below).
                var e = Assert.Throws<ArgumentNullException>(
                    () => s.ScoreReplies(Message, null), "null replies");
                Assert.Equal("replies", e.ParamName, "null replies: the parameter named");
                var cases = new Dictionary<string, Action>
                {
                    { "a null reply", () => s.ScoreReplies(Message, new[] { Replies[0], null }) },
                    { "a reply with a NUL", () => s.ScoreReplies(Message, new[] { "cut\0here" }) },
                };
                foreach (KeyValuePair<string, Action> c in cases)
                {
                    var bad = Assert.Throws<ArgumentException>(c.Value, c.Key);
                    Assert.Equal("replies", bad.ParamName, c.Key + ": the parameter named");
                }
                var nul = Assert.Throws<ArgumentException>(
                    () => s.ScoreReplies("cut\0here", Replies), "a message with a NUL");
                Assert.Equal("message", nul.ParamName, "message with a NUL: the parameter named");
                Assert.Equal(0, s.Info.Tokens, "no tokens");
            }
        }

        private static void NullMessageScoresRewoundReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                foreach (string template in new[] { "raw", "chatml" })
                {
                    string what = " (" + template + ")";
                    var options = new SessionOptions { ChatTemplate = template };
                    ReplyScore[] expected;
                    using (Session fresh = engine.CreateSession(options))
                        expected = fresh.ScoreReplies(Message, Replies, true);
                    using (Session s = engine.CreateSession(options))
                    {
                        s.Send(Message, Fixture.Greedy(32));
                        s.Rewind(1);
                        string before = Snapshot(s);
                        ReplyScore[] scores = s.ScoreReplies(null, Replies, true);
                        Assert.Equal(expected.Length, scores.Length, "one score a reply" + what);
                        for (int i = 0; i < scores.Length; i++)
                        {
                            string which = " [" + i + "]" + what;
                            Assert.Equal(Replies[i], scores[i].Text, "the text" + which);
                            Assert.Equal(expected[i].TokenCount, scores[i].TokenCount,
                                         "tokens" + which);
                            // The same tokens over KV computed otherwise: close, not bit for bit.
                            double error = Math.Abs(scores[i].LogProb - expected[i].LogProb);
                            Assert.True(error <= 1e-9 * Math.Abs(expected[i].LogProb),
                                        "logprob " + scores[i].LogProb + ", expected "
                                        + expected[i].LogProb + which);
                        }
                        Assert.Equal(before, Snapshot(s), "tokens and turns" + what);
                    }
                }
            }
        }

        private static void NullMessageWithNothingToGoOnFromFails()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                var withPrompt = new SessionOptions
                {
                    ChatTemplate = "chatml", SystemPrompt = "You tell stories.",
                };
                var sessions = new Dictionary<string, SessionOptions>
                {
                    { "a fresh session", new SessionOptions { ChatTemplate = "raw" } },
                    { "a system prompt only", withPrompt },
                };
                foreach (KeyValuePair<string, SessionOptions> c in sessions)
                {
                    using (Session s = engine.CreateSession(c.Value))
                    {
                        string before = Snapshot(s);
                        ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                            () => s.ScoreReplies(null, Replies), c.Key);
                        Assert.True(e.Message.Length > 0, c.Key + ": the library's own message");
                        Assert.Equal(before, Snapshot(s), c.Key + ": tokens and turns");
                    }
                }
            }
        }

        private static void HugeReplyDoesNotFit()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                string huge = Fixture.TextBeyondContext(engine);
                s.Send("The little dog", Fixture.Greedy(8));
                string before = Snapshot(s);
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.ContextFull,
                    () => s.ScoreReplies(Message, new[] { Replies[0], huge }),
                    "scoring it");
                Assert.True(e.Message.Contains("reply 1"), "the message says which, got "
                            + e.Message);
                Assert.Equal(before, Snapshot(s), "tokens and turns");
                Assert.Equal(2, s.ScoreReplies(Message, Replies).Length, "short ones still fit");
            }
        }

        private static void ReentrantScoreIsBusy()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.ThrowsStatus(ParleyStatus.Busy,
                    () => s.Stream("Once", Fixture.Greedy(8),
                                   piece => s.ScoreReplies(Message, Replies)),
                    "ScoreReplies from inside the session's handler");
            }
        }

        private static void DisposedSessionThrows()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                s.Dispose();
                Assert.Throws<ObjectDisposedException>(() => s.ScoreReplies(Message, Replies),
                                                       "ScoreReplies after Dispose");
            }
        }
    }
}
