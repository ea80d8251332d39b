// Session.Continue (since 0.4): generation without a new user message. It gives the reply a
// rewind dropped again (regenerate), or more of a reply left open, appended to it.
// Session.StreamContinue is its enumerated form, as the enumerated Stream is Send's.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace Parley.Tests
{
    internal static class ContinueTests
    {
        private const string Prompt = "Once upon a time";
        private const string EndingPrompt = "The little dog";  // the raw model ends this reply
        private const string Prefix = " There was a";
        private const int MaxTokens = 32;

        public static void Register(TestRunner r)
        {
            r.Add("continuing a rewound reply gives it again", RegenerateGivesTheReplyAgain);
            r.Add("continuing a reply cut at MaxTokens gives the longer reply", CutReplyGrows);
            r.Add("a reply written with AddExchange is continued", WrittenReplyIsContinued);
            r.Add("continued pieces concatenate to the returned text", PiecesMakeTheText);
            r.Add("an enumerated continuation gives what Continue gives", EnumeratedIsContinue);
            r.Add("a rewound reply is enumerated again", RewoundReplyIsEnumerated);
            r.Add("leaving an enumerated continuation early keeps it", LeavingEnumerationEarly);
            r.Add("a ReplyPrefix starts a regenerated reply", PrefixStartsRegeneratedReply);
            r.Add("nothing to continue in a fresh session is InvalidArgument", FreshSessionFails);
            r.Add("a reply the model ended is not continued", EndedReplyFails);
            r.Add("a ReplyPrefix steers a reply under way", PrefixSteersReplyUnderWay);
            r.Add("Continue and StreamContinue on a disposed session throw",
                  DisposedSessionThrows);
        }

        private static GenerateOptions Greedy(int maxTokens, string prefix = null)
        {
            GenerateOptions o = Fixture.Greedy(maxTokens);
            o.ReplyPrefix = prefix;
            return o;
        }

        private static string LastText(Session s)
        {
            IList<Turn> turns = s.Turns;
            return turns[turns.Count - 1].Text;
        }

        private static void RegenerateGivesTheReplyAgain()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                foreach (string template in new[] { "raw", "chatml" })
                {
                    string what = " (" + template + ")";
                    var options = new SessionOptions { ChatTemplate = template };
                    using (Session s = engine.CreateSession(options))
                    {
                        string reply = s.Send(Prompt, Greedy(MaxTokens));
                        int[] tokens = s.Tokens;
                        int turns = s.Info.Turns;
                        s.Rewind(1);
                        Assert.Equal(turns - 1, s.Info.Turns, "turns after the rewind" + what);
                        Assert.Equal(reply, s.Continue(Greedy(MaxTokens)),
                                     "the reply again" + what);
                        Assert.SequenceEqual(tokens, s.Tokens, "the tokens again" + what);
                        Assert.Equal(turns, s.Info.Turns, "turns" + what);
                        Assert.Equal(reply, LastText(s), "the kept turn" + what);
                        Assert.Equal(0, s.LastStats.PromptTokens, "prompt tokens" + what);
                        Assert.Equal(MaxTokens, s.LastStats.GeneratedTokens, "generated" + what);
                        Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "reason" + what);
                    }
                }
                // A sampled reply comes again with the same seed.
                var sampled = new GenerateOptions
                {
                    Temperature = 0.8f, Seed = 1234, MaxTokens = 24,
                };
                using (Session s = Fixture.RawSession(engine))
                {
                    string reply = s.Send(Prompt, sampled);
                    int[] tokens = s.Tokens;
                    s.Rewind(1);
                    Assert.Equal(reply, s.Continue(sampled), "the sampled reply again");
                    Assert.SequenceEqual(tokens, s.Tokens, "the sampled tokens again");
                }
            }
        }

        private static void CutReplyGrows()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string expected;
                int[] expectedTokens;
                using (Session whole = Fixture.RawSession(engine))
                {
                    expected = whole.Send(Prompt, Greedy(10));
                    expectedTokens = whole.Tokens;
                }
                using (Session s = Fixture.RawSession(engine))
                {
                    string first = s.Send(Prompt, Greedy(4));
                    int turns = s.Info.Turns;
                    string more = s.Continue(Greedy(6));
                    Assert.True(more.Length > 0, "the reply grew");
                    Assert.Equal(turns, s.Info.Turns, "the same turn, not a new one");
                    Assert.Equal(expected, LastText(s), "the continued turn");
                    Assert.Equal(expected, first + more, "what Send and Continue returned");
                    Assert.SequenceEqual(expectedTokens, s.Tokens, "the tokens");
                    Assert.Equal(0, s.LastStats.PromptTokens, "prompt tokens");
                    Assert.Equal(6, s.LastStats.GeneratedTokens, "generated tokens");
                    Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "stop reason");
                }
            }
        }

        private static void WrittenReplyIsContinued()
        {
            const string written = "there was a big red dog.";
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.AddExchange(Prompt, written);
                string more = s.Continue(Greedy(MaxTokens));
                Assert.True(more.Length > 0, "the written reply grew");
                Assert.Equal(2, s.Info.Turns, "turns");
                Assert.Equal(written + more, LastText(s), "the continued turn");
            }
        }

        private static void PiecesMakeTheText()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send(Prompt, Greedy(4));
                var pieces = new List<string>();
                string more = s.Continue(Greedy(MaxTokens), pieces.Add);
                Assert.True(pieces.Count > 1, "several pieces (" + pieces.Count + ")");
                Assert.Equal(more, string.Concat(pieces), "the pieces");
            }
        }

        private static void EnumeratedIsContinue()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                string first = s.Send(Prompt, Greedy(4));
                using (Session twin = s.Fork())
                {
                    string expected = twin.Continue(Greedy(MaxTokens));
                    int[] tokens = s.Tokens;
                    IEnumerable<string> enumerated = s.StreamContinue(Greedy(MaxTokens));
                    Assert.SequenceEqual(tokens, s.Tokens, "nothing before the enumeration");
                    List<string> pieces = enumerated.ToList();
                    Assert.True(pieces.Count > 1, "several pieces (" + pieces.Count + ")");
                    Assert.Equal(expected, string.Concat(pieces), "the pieces");
                    Assert.Equal(first + expected, LastText(s), "the continued turn");
                    Assert.SequenceEqual(twin.Tokens, s.Tokens, "the tokens");
                }
                Assert.Equal(0, s.LastStats.PromptTokens, "prompt tokens");
                Assert.Equal(MaxTokens, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "stop reason");
            }
        }

        private static void RewoundReplyIsEnumerated()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                string reply = s.Send(Prompt, Greedy(MaxTokens));
                int[] tokens = s.Tokens;
                s.Rewind(1);
                Assert.Equal(reply, string.Concat(s.StreamContinue(Greedy(MaxTokens))),
                             "the reply again");
                Assert.SequenceEqual(tokens, s.Tokens, "the tokens again");
            }
        }

        private static void LeavingEnumerationEarly()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                string first = s.Send(Prompt, Greedy(4));
                int turns = s.Info.Turns;
                var taken = new List<string>();
                foreach (string piece in s.StreamContinue(Greedy(0)))
                {
                    taken.Add(piece);
                    Thread.Sleep(50);  // a reply that ran ahead of the loop would grow now
                    break;
                }
                Assert.Equal(1, taken.Count, "pieces taken");
                // The worker has finished: the reply it stopped is kept, the same turn grown by
                // exactly what was taken (it waits for the loop, never runs ahead of it).
                Assert.Equal(turns, s.Info.Turns, "the same turn, not a new one");
                Assert.Equal(first + taken[0], LastText(s), "the kept reply");
                Assert.Equal(StopReason.Cancelled, s.LastStats.StopReason, "stop reason");
                Assert.Equal(1, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.True(s.Continue(Greedy(4)).Length > 0, "the session is free again");
            }
        }

        private static void PrefixStartsRegeneratedReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string expected;
                using (Session s = Fixture.RawSession(engine))
                    expected = s.Send(Prompt, Greedy(MaxTokens, Prefix));
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send(Prompt, Greedy(MaxTokens));
                    s.Rewind(1);
                    var pieces = new List<string>();
                    string reply = s.Continue(Greedy(MaxTokens, Prefix), pieces.Add);
                    Assert.Equal(expected, reply, "the reply with the prefix");
                    Assert.True(pieces[0].StartsWith(Prefix, StringComparison.Ordinal),
                                "the prefix is streamed first");
                    Assert.Equal(expected, LastText(s), "the kept turn");
                }
            }
        }

        private static void FreshSessionFails()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                using (Session s = Fixture.RawSession(engine))
                {
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                                        () => s.Continue(Greedy(MaxTokens)), "a fresh session");
                    Assert.Equal(0, s.Info.Turns, "no turns");
                    // As the enumerated Stream, the library is asked at the first MoveNext.
                    IEnumerable<string> enumerated = s.StreamContinue(Greedy(MaxTokens));
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                                        () => enumerated.ToList(), "an enumerated continuation");
                    Assert.Equal(0, s.Info.Turns, "still no turns");
                }
                var options = new SessionOptions
                {
                    ChatTemplate = "chatml", SystemPrompt = "You tell stories.",
                };
                using (Session s = engine.CreateSession(options))
                {
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                                        () => s.Continue(Greedy(MaxTokens)),
                                        "a system prompt only");
                    Assert.Equal(1, s.Info.Turns, "the system prompt only");
                }
            }
        }

        private static void EndedReplyFails()
        {
            var untilTheEnd = new GenerateOptions { Temperature = 0, MaxTokens = 0 };
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                string reply = s.Send(EndingPrompt, untilTheEnd);
                if (s.LastStats.StopReason != StopReason.EndToken)
                    throw new SkipException("the model did not end its reply to \"" + EndingPrompt
                                            + "\" (" + s.LastStats.StopReason + ")");
                int[] tokens = s.Tokens;
                Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                                    () => s.Continue(Greedy(MaxTokens)), "an ended reply");
                Assert.SequenceEqual(tokens, s.Tokens, "tokens unchanged");
                Assert.Equal(reply, LastText(s), "the reply unchanged");
                s.Rewind(1);  // a rewound reply is regenerated instead
                Assert.Equal(reply, s.Continue(untilTheEnd), "the ended reply again");
                Assert.Equal(StopReason.EndToken, s.LastStats.StopReason, "stop reason");
            }
        }

        private static void PrefixSteersReplyUnderWay()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                // A leading space starts a word, text without one joins the last word.
                foreach (string steer in new[] { " and then the dragon", "," })
                {
                    string what = " (\"" + steer + "\")";
                    using (Session s = Fixture.RawSession(engine))
                    {
                        string first = s.Send(Prompt, Greedy(4));
                        int turns = s.Info.Turns;
                        var pieces = new List<string>();
                        string more = s.Continue(Greedy(MaxTokens, steer), pieces.Add);
                        Assert.True(more.StartsWith(steer, StringComparison.Ordinal),
                                    "the text starts with the prefix: \"" + more + "\"" + what);
                        Assert.True(pieces[0].StartsWith(steer, StringComparison.Ordinal),
                                    "the prefix is streamed first" + what);
                        Assert.True(more.Length > steer.Length, "the model went on" + what);
                        Assert.Equal(turns, s.Info.Turns, "the same turn, not a new one" + what);
                        Assert.Equal(first + more, LastText(s), "the steered turn" + what);
                        Assert.Equal(MaxTokens, s.LastStats.GeneratedTokens,
                                     "generated after the prefix" + what);
                        Assert.True(s.Continue(Greedy(MaxTokens, "")).Length > 0,
                                    "\"\" is no prefix" + what);
                    }
                }
            }
        }

        private static void DisposedSessionThrows()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                s.Dispose();
                Assert.Throws<ObjectDisposedException>(() => s.Continue(), "a disposed session");
                Assert.Throws<ObjectDisposedException>(() => s.StreamContinue(),
                                                       "StreamContinue on a disposed session");
            }
        }
    }
}
