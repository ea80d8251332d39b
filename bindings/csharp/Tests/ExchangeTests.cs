// Session.AddExchange (since 0.3): a user message and a reply the caller wrote join the
// conversation as turns, tokenized by the library, and the model continues after them.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;

namespace Parley.Tests
{
    internal static class ExchangeTests
    {
        private const string User = "Once upon a time,";
        private const string Reply = "there was a big red dog. He liked to run.";

        public static void Register(TestRunner r)
        {
            r.Add("an exchange is two turns and a greedy send follows it", ExchangeIsTwoTurns);
            r.Add("a raw reply continues the text: its space starts its first word",
                  TokensEndWithReply);
            r.Add("Rewind(2) gives back the tokens from before", RewindRemovesExchange);
            r.Add("null text is refused", NullTextIsRefused);
            r.Add("a reply longer than the context is ContextFull", LongReplyIsContextFull);
            r.Add("AddExchange from the session's own handler is Busy", ReentrantAddIsBusy);
        }

        private static void ExchangeIsTwoTurns()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.AddExchange(User, Reply);
                IList<Turn> turns = s.Turns;
                Assert.Equal(2, turns.Count, "turns");
                Assert.Equal(Role.User, turns[0].Role, "first turn's role");
                Assert.Equal(User, turns[0].Text, "first turn's text");
                Assert.Equal(Role.Assistant, turns[1].Role, "second turn's role");
                Assert.Equal(Reply, turns[1].Text, "second turn's text");
                int written = s.Info.Tokens;

                string next = s.Send(" One day,", Fixture.Greedy(16));
                Assert.True(next.Length > 0, "a reply follows the exchange");
                Assert.Equal(16, s.LastStats.GeneratedTokens, "generated tokens");
                // The exchange's KV was computed by AddExchange, not by this send.
                Assert.True(s.LastStats.ReusedTokens >= written - 1,
                            "the exchange is reused (" + s.LastStats.ReusedTokens + ")");
                Assert.Equal(4, s.Info.Turns, "turns after the send");
                Assert.Equal(next, s.Turns[3].Text, "the generated reply's turn");
            }
        }

        private static void TokensEndWithReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send("The little dog", Fixture.Greedy(8));
                int[] before = s.Tokens;
                s.AddExchange(User, " " + Reply);
                int[] after = s.Tokens;
                int[] replyIds = engine.Tokenize(Reply);
                Assert.True(replyIds.Length > 0, "the reply has tokens");
                Assert.True(after.Length > before.Length + replyIds.Length,
                            "the user message lies between");
                Assert.SequenceEqual(before, after.Take(before.Length).ToArray(),
                                     "earlier tokens kept");
                Assert.SequenceEqual(replyIds, after.Skip(after.Length - replyIds.Length).ToArray(),
                                     "the reply's ids");
            }
        }

        private static void RewindRemovesExchange()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send("The little dog", Fixture.Greedy(8));
                int[] before = s.Tokens;
                s.AddExchange(User, Reply);
                Assert.Equal(4, s.Info.Turns, "turns with the exchange");
                s.Rewind(2);
                Assert.Equal(2, s.Info.Turns, "turns after the rewind");
                Assert.SequenceEqual(before, s.Tokens, "tokens after the rewind");
            }
        }

        private static void NullTextIsRefused()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.AddExchange(User, Reply);
                var e = Assert.Throws<ArgumentNullException>(() => s.AddExchange(null, Reply),
                                                             "null user text");
                Assert.Equal("userText", e.ParamName, "the parameter named");
                e = Assert.Throws<ArgumentNullException>(() => s.AddExchange(User, null),
                                                         "null reply text");
                Assert.Equal("replyText", e.ParamName, "the parameter named");
                Assert.Throws<ArgumentException>(() => s.AddExchange(User, "cut\0here"),
                                                 "text with a NUL");
                Assert.Equal(2, s.Info.Turns, "turns unchanged");
            }
        }

        private static void LongReplyIsContextFull()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                s.Send("The little dog", Fixture.Greedy(8));
                int[] before = s.Tokens;
                var longReply = new StringBuilder();
                while (longReply.Length < 400 * 1024) longReply.Append("The dog ran and ran. ");
                Assert.ThrowsStatus(ParleyStatus.ContextFull,
                    () => s.AddExchange(User, longReply.ToString()), "a 400 KB reply");
                Assert.Equal(2, s.Info.Turns, "turns unchanged");
                Assert.SequenceEqual(before, s.Tokens, "tokens unchanged");
                s.Send(" The end.", Fixture.Greedy(4));  // still usable
            }
        }

        private static void ReentrantAddIsBusy()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Assert.ThrowsStatus(ParleyStatus.Busy,
                    () => s.Stream("Once", Fixture.Greedy(8), piece => s.AddExchange(User, Reply)),
                    "AddExchange from inside the session's handler");
                Assert.Equal(2, s.Info.Turns, "only the stopped reply's turns");
            }
        }
    }
}
