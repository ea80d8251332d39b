// GenerateOptions.Format (since 0.11): a Json reply is drawn among the tokens that keep it the
// start of one JSON object and ends where the object closes (StopReason.FormatEnd). A start
// that cannot become an object, biases that ban every token the format allows, and a value
// that is no ReplyFormat are the library's to refuse, with the conversation left as it was.
using System;
using System.Collections.Generic;
using System.Linq;

namespace Parley.Tests
{
    internal static class FormatTests
    {
        private const string Prompt = "Once upon a time";

        public static void Register(TestRunner r)
        {
            r.Add("Format is Text by default", TextByDefault);
            r.Add("a Json reply the format ends parses as one object", WholeRepliesParse);
            r.Add("a bias for '}' closes the object right after the prefix", BiasClosesObject);
            r.Add("a prefix that is a whole object generates nothing", WholePrefix);
            r.Add("a start that cannot become an object is refused and changes nothing",
                  RefusedStarts);
            r.Add("a Format that is no ReplyFormat is refused", UnknownFormatIsRefused);
        }

        private static GenerateOptions Json(int maxTokens, string prefix = null)
        {
            GenerateOptions o = Fixture.Greedy(maxTokens);
            o.IgnoreEos = false;
            o.Format = ReplyFormat.Json;
            o.ReplyPrefix = prefix;
            return o;
        }

        // The ids whose text, decoded alone, is `text` (or starts with it).
        internal static List<int> IdsShowing(Engine engine, string text, bool startsWith)
        {
            var ids = new List<int>();
            for (int id = 0; id < engine.ModelInfo.VocabSize; id++)
            {
                string shown;
                try
                {
                    shown = engine.Detokenize(new[] { id });
                }
                catch (ParleyException)
                {
                    continue;  // a token with no text of its own
                }
                if (startsWith ? shown.StartsWith(text, StringComparison.Ordinal) : shown == text)
                    ids.Add(id);
            }
            return ids;
        }

        // Biases every token that shows '}' alone: the story model writes strings, keys and
        // values readily but seldom closes an object of its own accord.
        private static Dictionary<int, float> ClosingBias(Engine engine, float bias)
        {
            var biases = IdsShowing(engine, "}", false).ToDictionary(id => id, id => bias);
            Assert.True(biases.Count > 0, "the vocabulary has a '}' token");
            return biases;
        }

        private static bool IsObject(string text)
        {
            try
            {
                return MiniJson.Parse(text) is Dictionary<string, object>;
            }
            catch (FormatException)
            {
                return false;
            }
        }

        private static void TextByDefault()
        {
            Assert.Equal(ReplyFormat.Text, new GenerateOptions().Format, "the default");
            Assert.Equal(0, (int)ReplyFormat.Text, "PARLEY_FORMAT_TEXT");
            Assert.Equal(1, (int)ReplyFormat.Json, "PARLEY_FORMAT_JSON");
            Assert.Equal(7, (int)StopReason.FormatEnd, "PARLEY_STOP_FORMAT_END");
        }

        private static void WholeRepliesParse()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Dictionary<int, float> closing = ClosingBias(engine, 15f);
                int whole = 0;
                for (ulong seed = 1; seed <= 8; seed++)
                {
                    GenerateOptions o = Json(200, seed % 2 == 1 ? "{\"story\": \"" : null);
                    o.Temperature = 1f;
                    o.Seed = seed;
                    o.LogitBias = closing;
                    using (Session s = Fixture.RawSession(engine))
                    {
                        var pieces = new List<string>();
                        string reply = s.Stream(Prompt, o, pieces.Add);
                        string what = " (seed " + seed + "): " + reply;
                        Assert.Equal(reply, string.Concat(pieces), "the streamed text" + what);
                        Assert.Equal(reply, s.Turns[1].Text, "the kept turn" + what);
                        if (s.LastStats.StopReason == StopReason.FormatEnd)
                        {
                            whole++;
                            Assert.True(IsObject(reply), "a JSON object" + what);
                        }
                        else
                        {
                            Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason,
                                         "cut by MaxTokens" + what);
                            Assert.True(reply.TrimStart().StartsWith("{", StringComparison.Ordinal),
                                        "an object's start" + what);
                            Assert.True(!IsObject(reply), "not yet an object" + what);
                        }
                    }
                }
                Assert.True(whole > 0, "some replies closed their object (" + whole + " of 8)");
            }
        }

        private static void BiasClosesObject()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                GenerateOptions o = Json(50, "{\"a\": 1");
                o.LogitBias = ClosingBias(engine, 100f);
                string reply = s.Send(Prompt, o);
                Assert.Equal("{\"a\": 1}", reply, "the reply");
                Assert.Equal(StopReason.FormatEnd, s.LastStats.StopReason, "stop reason");
                Assert.Equal(1, s.LastStats.GeneratedTokens, "generated tokens");
                var parsed = (Dictionary<string, object>)MiniJson.Parse(reply);
                Assert.Equal(1, parsed.Count, "keys");
                Assert.Equal((object)1L, parsed["a"], "\"a\"");
                // An enumerated stream sends on a worker thread: the same reply.
                using (Session t = Fixture.RawSession(engine))
                {
                    Assert.Equal(reply, string.Concat(t.Stream(Prompt, o)), "enumerated");
                    Assert.Equal(StopReason.FormatEnd, t.LastStats.StopReason,
                                 "enumerated stop reason");
                }
            }
        }

        private static void WholePrefix()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.Equal("{}", s.Send(Prompt, Json(50, "{}")), "the reply");
                Assert.Equal(StopReason.FormatEnd, s.LastStats.StopReason, "stop reason");
                Assert.Equal(0, s.LastStats.GeneratedTokens, "generated tokens");
                Assert.Equal("{}", s.Turns[1].Text, "the kept turn");
                // Once whole, going on adds nothing.
                Assert.Equal("", s.Continue(Json(20)), "continued");
                Assert.Equal(StopReason.FormatEnd, s.LastStats.StopReason, "continued reason");
                Assert.Equal(0, s.LastStats.GeneratedTokens, "continued tokens");
                // The conversation goes on after it.
                s.Send(" Then", Fixture.Greedy(4));
                Assert.Equal(4, s.Info.Turns, "the session goes on");
            }
        }

        private static void RefusedStarts()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                foreach (string prefix in new[] { "[", "{\"a\" 1" })
                {
                    GenerateOptions o = Json(10, prefix);
                    ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Send(Prompt, o), "Send, prefix " + prefix);
                    Assert.True(e.Message.Contains(
                                    "reply_prefix is not the start of a JSON object"),
                                "the message says why: " + e.Message);
                    Assert.True(e.Reply == null, "nothing kept");
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Stream(Prompt, o).ToArray(), "Stream, prefix " + prefix);
                    Assert.Equal(0, s.Info.Turns, "no turn after prefix " + prefix);
                    Assert.Equal(0, s.Tokens.Length, "no tokens after prefix " + prefix);
                }

                // A plain reply that is not an object's start cannot go on as one.
                s.Send(Prompt, Fixture.Greedy(3));
                int[] tokens = s.Tokens;
                ParleyException c = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => s.Continue(Json(10)), "Continue of a plain reply");
                Assert.True(c.Message.Contains("the reply so far is not the start of a JSON"),
                            "the message says why: " + c.Message);
                Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => s.StreamContinue(Json(10)).ToArray(), "StreamContinue");
                Assert.SequenceEqual(tokens, s.Tokens, "the tokens after Continue");

                // Biases that ban every token the format allows: after "t" only "rue" may follow.
                GenerateOptions banned = Json(10, "{\"a\": t");
                banned.LogitBias = IdsShowing(engine, "r", true)
                    .ToDictionary(id => id, id => float.NegativeInfinity);
                ParleyException b = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => s.Send(" Twice", banned), "every allowed token banned");
                Assert.True(b.Message.Contains("logit_bias"),
                            "the message names logit_bias: " + b.Message);
                Assert.Equal(2, s.Info.Turns, "the turns after the biases");
                Assert.SequenceEqual(tokens, s.Tokens, "the tokens after the biases");

                s.Send(" Then", Fixture.Greedy(4));
                Assert.Equal(4, s.Info.Turns, "the session goes on");
            }
        }

        private static void UnknownFormatIsRefused()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send(Prompt, Fixture.Greedy(3));
                int[] tokens = s.Tokens;
                foreach (int bad in new[] { 2, 7, -1 })
                {
                    GenerateOptions o = Fixture.Greedy(4);
                    o.Format = (ReplyFormat)bad;
                    ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Send(" Then", o), "Send, format " + bad);
                    Assert.True(e.Message.Contains("format"),
                                "the message names format: " + e.Message);
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Stream(" Then", o).ToArray(), "Stream, format " + bad);
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Continue(o), "Continue, format " + bad);
                    Assert.Equal(2, s.Info.Turns, "turns after format " + bad);
                    Assert.SequenceEqual(tokens, s.Tokens, "tokens after format " + bad);
                }
            }
        }
    }
}
