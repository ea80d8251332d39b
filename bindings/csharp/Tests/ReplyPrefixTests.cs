// GenerateOptions.ReplyPrefix (since 0.3): the reply starts with the caller's text, tokenized by
// the library as plain text, and the model goes on from it; it is streamed, returned and kept
// as the reply's start, and MaxTokens and Stop apply only to what follows it.
using System;
using System.Collections.Generic;
using System.Linq;

namespace Parley.Tests
{
    internal static class ReplyPrefixTests
    {
        private const string Prompt = "Once upon a time";
        private const string Prefix = " There was a";
        private const int MaxTokens = 32;

        public static void Register(TestRunner r)
        {
            r.Add("the reply starts with the prefix, in text and in tokens", ReplyStartsWithPrefix);
            r.Add("an enumerated stream starts with the prefix too", EnumeratedStreamHasPrefix);
            r.Add("a stop string inside the prefix does not stop the reply", StopInsidePrefix);
            r.Add("an empty prefix is none, one with a NUL is refused", EmptyAndBadPrefix);
        }

        private static GenerateOptions Greedy(string prefix, IList<string> stop = null)
        {
            GenerateOptions o = Fixture.Greedy(MaxTokens);
            o.ReplyPrefix = prefix;
            o.Stop = stop;
            return o;
        }

        // The conversation's tokens up to where the reply starts: a 1-token reply, dropped.
        private static int[] PromptTokens(Engine engine, string template)
        {
            using (Session s = engine.CreateSession(new SessionOptions { ChatTemplate = template }))
            {
                s.Send(Prompt, Fixture.Greedy(1));
                Assert.Equal(1, s.LastStats.GeneratedTokens, "a 1-token reply");
                int[] tokens = s.Tokens;
                return tokens.Take(tokens.Length - 1).ToArray();
            }
        }

        private static string PrefixedReply(Engine engine)
        {
            using (Session s = Fixture.RawSession(engine)) return s.Send(Prompt, Greedy(Prefix));
        }

        private static void ReplyStartsWithPrefix()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int[] prefixIds = engine.Tokenize(Prefix);
                Assert.True(prefixIds.Length > 0, "the prefix has tokens");
                foreach (string template in new[] { "raw", "chatml" })
                {
                    int[] before = PromptTokens(engine, template);
                    var options = new SessionOptions { ChatTemplate = template };
                    using (Session s = engine.CreateSession(options))
                    {
                        var pieces = new List<string>();
                        string reply = s.Stream(Prompt, Greedy(Prefix), pieces.Add);
                        string what = " (" + template + ")";
                        Assert.True(reply.StartsWith(Prefix, StringComparison.Ordinal),
                                    "the reply starts with the prefix" + what + ": " + reply);
                        Assert.True(reply.Length > Prefix.Length, "the model goes on" + what);
                        Assert.True(pieces[0].StartsWith(Prefix, StringComparison.Ordinal),
                                    "the prefix is streamed first" + what);
                        Assert.Equal(reply, string.Concat(pieces), "the streamed text" + what);
                        IList<Turn> turns = s.Turns;
                        Assert.Equal(reply, turns[turns.Count - 1].Text, "the kept turn" + what);
                        int[] tokens = s.Tokens;
                        Assert.SequenceEqual(before, tokens.Take(before.Length).ToArray(),
                                             "the prompt's tokens" + what);
                        Assert.SequenceEqual(prefixIds,
                            tokens.Skip(before.Length).Take(prefixIds.Length).ToArray(),
                            "the prefix's tokens where the reply starts" + what);
                        // MaxTokens counts only what follows the prefix.
                        Assert.Equal(before.Length + prefixIds.Length + MaxTokens, tokens.Length,
                                     "tokens in all" + what);
                        Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "reason" + what);
                    }
                }
            }
        }

        // The enumerated stream sends on a worker thread: the prefix's native copy must live
        // for that call too.
        private static void EnumeratedStreamHasPrefix()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string expected = PrefixedReply(engine);
                using (Session s = Fixture.RawSession(engine))
                {
                    string[] pieces = s.Stream(Prompt, Greedy(Prefix)).ToArray();
                    Assert.True(pieces[0].StartsWith(Prefix, StringComparison.Ordinal),
                                "the prefix is enumerated first");
                    Assert.Equal(expected, string.Concat(pieces), "the enumerated reply");
                    Assert.Equal(expected, s.Turns[1].Text, "the kept turn");
                }
            }
        }

        private static void StopInsidePrefix()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string full = PrefixedReply(engine);
                const string stop = "was";
                Assert.True(Prefix.Contains(stop), "the stop string is inside the prefix");
                // Stop strings look only past the prefix: the reply ends at the first one after.
                string rest = full.Substring(Prefix.Length);
                int cut = rest.IndexOf(stop, StringComparison.Ordinal);
                string expected = cut < 0 ? full : Prefix + rest.Substring(0, cut);
                using (Session s = Fixture.RawSession(engine))
                {
                    string reply = s.Send(Prompt, Greedy(Prefix, new[] { stop }));
                    Assert.Equal(expected, reply, "the reply past the prefix");
                    Assert.True(reply.Length > Prefix.Length, "more than the prefix");
                    Assert.Equal(cut < 0 ? StopReason.MaxTokens : StopReason.StopString,
                                 s.LastStats.StopReason, "stop reason");
                }
            }
        }

        private static void EmptyAndBadPrefix()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string plain;
                int[] plainTokens;
                using (Session s = Fixture.RawSession(engine))
                {
                    plain = s.Send(Prompt, Greedy(null));
                    plainTokens = s.Tokens;
                }
                using (Session s = Fixture.RawSession(engine))
                {
                    Assert.Equal(plain, s.Send(Prompt, Greedy("")), "the reply with \"\"");
                    Assert.SequenceEqual(plainTokens, s.Tokens, "the tokens with \"\"");
                }
                using (Session s = Fixture.RawSession(engine))
                {
                    var e = Assert.Throws<ArgumentException>(
                        () => s.Send(Prompt, Greedy("cut\0here")), "a prefix with a NUL");
                    Assert.Equal("ReplyPrefix", e.ParamName, "the parameter named");
                    Assert.Equal(0, s.Info.Turns, "nothing was sent");
                }
            }
        }
    }
}
