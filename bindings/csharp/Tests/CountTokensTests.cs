// Session.CountTokens (since 0.4): what a send would add before its reply, measured before it
// is sent, agrees with what the send then reports, and says when a message will not fit.
using System;
using System.Collections.Generic;
using System.Text;

namespace Parley.Tests
{
    internal static class CountTokensTests
    {
        private const string SystemPrompt = "You tell stories.";
        private static readonly string[] Messages = { "Tell me a story.", "And then?" };

        public static void Register(TestRunner r)
        {
            r.Add("CountTokens is what the send reports (raw, llama2, chatml)",
                  CountIsWhatSendReports);
            r.Add("CountTokens after a rewound reply is what the send reports", CountAfterRewind);
            r.Add("CountTokens changes nothing", CountingChangesNothing);
            r.Add("a message that does not fit leaves 0 and Send is ContextFull",
                  HugeMessageDoesNotFit);
            r.Add("CountTokens takes the text as Send takes it; a lone surrogate is refused",
                  TextIsTakenAsSendTakesIt);
            r.Add("null text or a NUL is refused as Send refuses it", BadTextIsRefused);
            r.Add("CountTokens from the session's own handler is Busy", ReentrantCountIsBusy);
            r.Add("CountTokens on a disposed session throws", DisposedSessionThrows);
        }

        private static Session ChatSession(Engine engine, string template)
        {
            return engine.CreateSession(
                new SessionOptions { SystemPrompt = SystemPrompt, ChatTemplate = template });
        }

        // What CountTokens must leave as it is.
        private static string Snapshot(Session s)
        {
            var text = new StringBuilder();
            text.Append(string.Join(",", s.Tokens)).Append('|').Append(s.Info.Tokens);
            foreach (Turn t in s.Turns) text.Append('|').Append(t.Role).Append(':').Append(t.Text);
            return text.ToString();
        }

        private static void CountIsWhatSendReports()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                int contextLength = engine.ModelInfo.ContextLength;
                foreach (string template in new[] { "raw", "llama2", "chatml" })
                {
                    using (Session s = ChatSession(engine, template))
                    {
                        // The first message comes after the system prompt; the second closes a
                        // reply cut at MaxTokens, which its count includes.
                        foreach (string text in Messages)
                        {
                            string what = template + ", \"" + text + "\"";
                            int before = s.Info.Tokens;
                            TokenCount count = s.CountTokens(text);
                            Assert.True(count.PromptTokens > 0, what + ": the message has tokens");
                            Assert.Equal(contextLength - before - count.PromptTokens,
                                         count.ContextLeft, what + ": context left");
                            s.Send(text, Fixture.Greedy(12));
                            Assert.Equal(count.PromptTokens, s.LastStats.PromptTokens,
                                         what + ": the send's prompt tokens");
                            Assert.Equal(before + count.PromptTokens + s.LastStats.GeneratedTokens,
                                         s.Info.Tokens, what + ": tokens after the send");
                        }
                    }
                }
            }
        }

        private static void CountAfterRewind()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = ChatSession(engine, "chatml"))
            {
                s.Send(Messages[0], Fixture.Greedy(12));
                s.Rewind(1);  // a user message without its reply
                TokenCount count = s.CountTokens(Messages[1]);
                s.Send(Messages[1], Fixture.Greedy(12));
                Assert.Equal(count.PromptTokens, s.LastStats.PromptTokens, "prompt tokens");
            }
        }

        private static void CountingChangesNothing()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = ChatSession(engine, "chatml"))
            using (Session uncounted = ChatSession(engine, "chatml"))
            {
                s.Send(Messages[0], Fixture.Greedy(12));
                string before = Snapshot(s);
                TurnStats stats = s.LastStats;
                TokenCount first = s.CountTokens(Messages[1]);
                TokenCount again = s.CountTokens(Messages[1]);
                Assert.Equal(first.PromptTokens, again.PromptTokens, "prompt tokens again");
                Assert.Equal(first.ContextLeft, again.ContextLeft, "context left again");
                Assert.Equal(before, Snapshot(s), "tokens and turns");
                Assert.True(ReferenceEquals(stats, s.LastStats), "LastStats kept");
                // The next send goes as in a session that never counted.
                string reply = s.Send(Messages[1], Fixture.Greedy(12));
                uncounted.Send(Messages[0], Fixture.Greedy(12));
                Assert.Equal(uncounted.Send(Messages[1], Fixture.Greedy(12)), reply, "the reply");
                Assert.SequenceEqual(uncounted.Tokens, s.Tokens, "the tokens");
            }
        }

        private static void HugeMessageDoesNotFit()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                int contextLength = engine.ModelInfo.ContextLength;
                string huge = Fixture.TextBeyondContext(engine);
                s.Send("The little dog", Fixture.Greedy(8));
                string before = Snapshot(s);
                TokenCount count = s.CountTokens(huge);
                Assert.True(count.PromptTokens > contextLength,
                            "more tokens than the context (" + count.PromptTokens + ")");
                Assert.Equal(0, count.ContextLeft, "context left");
                Assert.ThrowsStatus(ParleyStatus.ContextFull,
                    () => s.Send(huge, Fixture.Greedy(4)), "sending it");
                Assert.Equal(before, Snapshot(s), "tokens and turns");
                Assert.True(s.CountTokens("Once").ContextLeft > 0, "a short message still fits");
            }
        }

        private static void TextIsTakenAsSendTakesIt()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.True(s.CountTokens("").ContextLeft > 0, "an empty message fits");
                const string Text = "a\ufffdb";
                TokenCount count = s.CountTokens(Text);
                s.Send(Text, Fixture.Greedy(4));
                Assert.Equal(count.PromptTokens, s.LastStats.PromptTokens, "the send's count");
                // UTF-8 cannot carry a lone surrogate: refused by both, not taken as U+FFFD.
                foreach (Action<string> call in new Action<string>[]
                         { t => s.CountTokens(t), t => s.Send(t) })
                {
                    var e = Assert.Throws<ArgumentException>(() => call("a\ud800b"),
                                                             "a lone surrogate");
                    Assert.Equal("text", e.ParamName, "the parameter named");
                }
                Assert.Equal(2, s.Info.Turns, "nothing more was sent");
            }
        }

        private static void BadTextIsRefused()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                var calls = new Dictionary<string, Action<string>>
                {
                    { "CountTokens", text => s.CountTokens(text) },
                    { "Send", text => s.Send(text) },
                };
                foreach (KeyValuePair<string, Action<string>> call in calls)
                {
                    var e = Assert.Throws<ArgumentNullException>(() => call.Value(null),
                                                                 call.Key + " of null");
                    Assert.Equal("text", e.ParamName, call.Key + ": the parameter named");
                    var nul = Assert.Throws<ArgumentException>(() => call.Value("cut\0here"),
                                                               call.Key + " of text with a NUL");
                    Assert.Equal("text", nul.ParamName, call.Key + ": the parameter named");
                }
                Assert.Equal(0, s.Info.Turns, "no turns");
            }
        }

        private static void ReentrantCountIsBusy()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.ThrowsStatus(ParleyStatus.Busy,
                    () => s.Stream("Once", Fixture.Greedy(8), piece => s.CountTokens("again")),
                    "CountTokens from inside the session's handler");
            }
        }

        private static void DisposedSessionThrows()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Session s = Fixture.RawSession(engine);
                s.Dispose();
                Assert.Throws<ObjectDisposedException>(() => s.CountTokens("Once"),
                                                       "CountTokens after Dispose");
            }
        }
    }
}
