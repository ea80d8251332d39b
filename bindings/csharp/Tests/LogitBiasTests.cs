// GenerateOptions.LogitBias (since 0.4): biases added to chosen tokens' logits before sampling;
// -inf bans a token. Ids in range, each listed once, and biases finite or -inf are the
// library's to check.
using System;
using System.Collections.Generic;
using System.Linq;

namespace Parley.Tests
{
    internal static class LogitBiasTests
    {
        private const string Prompt = "Once upon a time";

        public static void Register(TestRunner r)
        {
            r.Add("a banned token is never chosen", BannedTokenIsNotChosen);
            r.Add("a large bias makes the reply that token", LargeBiasMakesTheReply);
            r.Add("an enumerated stream keeps the biases alive", EnumeratedStreamKeepsBiases);
            r.Add("an empty LogitBias is none", EmptyIsNone);
            r.Add("refused biases are InvalidArgument and change nothing", RefusedBiases);
            r.Add("Continue takes biases too", ContinueTakesBiases);
        }

        private static GenerateOptions Greedy(int maxTokens, IDictionary<int, float> bias)
        {
            GenerateOptions o = Fixture.Greedy(maxTokens);
            o.LogitBias = bias;
            return o;
        }

        private static Dictionary<int, float> Bias(int token, float bias)
        {
            return new Dictionary<int, float> { { token, bias } };
        }

        // The prompt's tokens and the first token of the greedy reply to it.
        private static int[] PromptAndFirst(Engine engine, IDictionary<int, float> bias,
                                            out int first)
        {
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send(Prompt, Greedy(1, bias));
                int[] tokens = s.Tokens;
                first = tokens[tokens.Length - 1];
                return tokens.Take(tokens.Length - 1).ToArray();
            }
        }

        // A one-token word the greedy reply does not start with.
        private static int Favoured(Engine engine, int avoid)
        {
            int[] ids = engine.Tokenize(" the");
            Assert.Equal(1, ids.Length, "\" the\" is one token");
            Assert.True(ids[0] != avoid, "the favoured token is not the greedy one");
            return ids[0];
        }

        private static int[] Repeated(int token, int n)
        {
            return Enumerable.Repeat(token, n).ToArray();
        }

        private static void BannedTokenIsNotChosen()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int first, other;
                int[] prompt = PromptAndFirst(engine, null, out first);
                int[] bannedPrompt = PromptAndFirst(
                    engine, Bias(first, float.NegativeInfinity), out other);
                Assert.SequenceEqual(prompt, bannedPrompt, "only the reply changed");
                Assert.True(other != first, "another first token than " + first);
            }
        }

        private static void LargeBiasMakesTheReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int first;
                int[] prompt = PromptAndFirst(engine, null, out first);
                int x = Favoured(engine, first);
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send(Prompt, Greedy(5, Bias(x, 100f)));
                    int[] tokens = s.Tokens;
                    Assert.SequenceEqual(prompt, tokens.Take(prompt.Length).ToArray(), "prompt");
                    Assert.SequenceEqual(Repeated(x, 5), tokens.Skip(prompt.Length).ToArray(),
                                         "the reply's tokens");
                    Assert.Equal(5, s.LastStats.GeneratedTokens, "generated tokens");
                }
            }
        }

        // The enumerated stream sends on a worker thread: the native array must live for that
        // call too.
        private static void EnumeratedStreamKeepsBiases()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int first;
                int[] prompt = PromptAndFirst(engine, null, out first);
                int x = Favoured(engine, first);
                using (Session s = Fixture.RawSession(engine))
                {
                    string reply = string.Concat(s.Stream(Prompt, Greedy(5, Bias(x, 100f))));
                    Assert.Equal(reply, s.Turns[1].Text, "the kept turn");
                    Assert.SequenceEqual(Repeated(x, 5), s.Tokens.Skip(prompt.Length).ToArray(),
                                         "the reply's tokens");
                }
            }
        }

        private static void EmptyIsNone()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string plain;
                int[] plainTokens;
                using (Session s = Fixture.RawSession(engine))
                {
                    plain = s.Send(Prompt, Greedy(32, null));
                    plainTokens = s.Tokens;
                }
                using (Session s = Fixture.RawSession(engine))
                {
                    Assert.Equal(plain, s.Send(Prompt, Greedy(32, new Dictionary<int, float>())),
                                 "the reply with an empty LogitBias");
                    Assert.SequenceEqual(plainTokens, s.Tokens, "the tokens");
                }
            }
        }

        private static void RefusedBiases()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int vocab = engine.ModelInfo.VocabSize;
                var everyToken = new Dictionary<int, float>();
                for (int i = 0; i < vocab; i++) everyToken[i] = float.NegativeInfinity;
                var cases = new Dictionary<string, Dictionary<int, float>>
                {
                    { "id -1", Bias(-1, 1f) },
                    { "id VocabSize", Bias(vocab, 1f) },
                    { "NaN", Bias(5, float.NaN) },
                    { "+inf", Bias(5, float.PositiveInfinity) },
                    { "every token banned", everyToken },
                };
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send(Prompt, Greedy(4, null));
                    int turns = s.Info.Turns;
                    int[] tokens = s.Tokens;
                    foreach (KeyValuePair<string, Dictionary<int, float>> c in cases)
                    {
                        GenerateOptions o = Greedy(4, c.Value);
                        ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                            () => s.Send(" Then", o), "Send, " + c.Key);
                        Assert.True(e.Message.Contains("logit_bias"),
                                    "the message names logit_bias: " + e.Message);
                        Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                            () => s.Stream(" Then", o).ToArray(), "Stream, " + c.Key);
                        Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                            () => s.Continue(o), "Continue, " + c.Key);
                        Assert.Equal(turns, s.Info.Turns, "turns after " + c.Key);
                        Assert.SequenceEqual(tokens, s.Tokens, "tokens after " + c.Key);
                    }
                    s.Send(" Then", Greedy(4, null));
                    Assert.Equal(turns + 2, s.Info.Turns, "the session goes on");
                }
            }
        }

        private static void ContinueTakesBiases()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int first, other;
                int[] prompt = PromptAndFirst(engine, null, out first);
                int x = Favoured(engine, first);
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send(Prompt, Greedy(4, null));
                    int[] before = s.Tokens;
                    int turns = s.Info.Turns;
                    s.Continue(Greedy(3, Bias(x, 100f)));
                    Assert.Equal(turns, s.Info.Turns, "appended to the open reply");
                    Assert.SequenceEqual(before.Concat(Repeated(x, 3)).ToArray(), s.Tokens,
                                         "the continued tokens");
                }
                // Regenerating a rewound reply with its first token banned gives another start.
                Dictionary<int, float> ban = Bias(first, float.NegativeInfinity);
                PromptAndFirst(engine, ban, out other);
                using (Session s = Fixture.RawSession(engine))
                {
                    s.Send(Prompt, Greedy(1, null));
                    s.Rewind(1);
                    s.Continue(Greedy(1, ban));
                    Assert.SequenceEqual(prompt.Concat(new[] { other }).ToArray(), s.Tokens,
                                         "the regenerated start");
                }
            }
        }
    }
}
