// Session.SetSystemPrompt (since 0.6): the conversation goes on under a new system prompt,
// every message kept, as if the prompt had been there from the start.
using System.Collections.Generic;

namespace Parley.Tests
{
    internal static class SystemPromptTests
    {
        private const string Pirate = "You are a pirate.";
        private static readonly string[][] Exchanges =
        {
            new[] { "Tell me a story.", "Once upon a time there was a dog." },
            new[] { "And then?", "He ran to the park and played." },
        };

        public static void Register(TestRunner r)
        {
            r.Add("a new prompt is turn 0, the other turns kept, and a send follows",
                  PromptIsAddedBeforeKeptTurns);
            r.Add("the tokens are those of a session begun with the prompt (llama2)",
                  () => TokensMatchFreshSession("llama2"));
            r.Add("the tokens are those of a session begun with the prompt (chatml)",
                  () => TokensMatchFreshSession("chatml"));
            r.Add("null or \"\" removes the system turn", NullOrEmptyRemovesPrompt);
            r.Add("a prompt longer than the context is ContextFull", LongPromptIsContextFull);
            r.Add("a reopened session has the new prompt", ReopenedSessionHasPrompt);
        }

        private static Session ChatSession(Engine engine, string template, string system = null,
                                           string id = null)
        {
            return engine.CreateSession(
                new SessionOptions { ChatTemplate = template, SystemPrompt = system, Id = id });
        }

        private static void AddExchanges(Session s)
        {
            foreach (string[] exchange in Exchanges) s.AddExchange(exchange[0], exchange[1]);
        }

        // Role and text of each turn, one line each: the turns compared whole in one assert.
        private static string Describe(IList<Turn> turns)
        {
            var lines = new List<string>();
            foreach (Turn t in turns) lines.Add(t.Role + ": " + t.Text);
            return string.Join("\n", lines);
        }

        private static void PromptIsAddedBeforeKeptTurns()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = ChatSession(engine, "chatml"))
            {
                string reply = s.Send("Tell me a story.", Fixture.Greedy(16));
                int[] before = s.Tokens;
                s.SetSystemPrompt(Pirate);
                IList<Turn> turns = s.Turns;
                Assert.Equal(3, turns.Count, "turns");
                Assert.Equal(Role.System, turns[0].Role, "turn 0's role");
                Assert.Equal(Pirate, turns[0].Text, "turn 0's text");
                Assert.Equal(Role.User, turns[1].Role, "turn 1's role");
                Assert.Equal("Tell me a story.", turns[1].Text, "turn 1's text");
                Assert.Equal(Role.Assistant, turns[2].Role, "turn 2's role");
                Assert.Equal(reply, turns[2].Text, "turn 2's text");
                Assert.True(s.Tokens.Length > before.Length, "the prompt's tokens come first");

                Assert.True(s.Send("And then?", Fixture.Greedy(16)).Length > 0, "a reply follows");
                Assert.Equal(5, s.Info.Turns, "turns after the send");
            }
        }

        private static void TokensMatchFreshSession(string template)
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = ChatSession(engine, template))
            using (Session fresh = ChatSession(engine, template, Pirate))
            {
                AddExchanges(s);
                AddExchanges(fresh);
                s.SetSystemPrompt(Pirate);
                Assert.SequenceEqual(fresh.Tokens, s.Tokens, "tokens");
                Assert.Equal(Describe(fresh.Turns), Describe(s.Turns), "turns");
                // The next turn reads the same conversation, so greedy replies agree.
                Assert.Equal(fresh.Send("What was its name?", Fixture.Greedy(16)),
                             s.Send("What was its name?", Fixture.Greedy(16)), "the next reply");
            }
        }

        private static void NullOrEmptyRemovesPrompt()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session withNull = ChatSession(engine, "chatml", Pirate))
            using (Session withEmpty = ChatSession(engine, "chatml", Pirate))
            using (Session fresh = ChatSession(engine, "chatml"))
            {
                AddExchanges(withNull);
                AddExchanges(withEmpty);
                AddExchanges(fresh);
                withNull.SetSystemPrompt(null);
                withEmpty.SetSystemPrompt("");
                foreach (Session s in new[] { withNull, withEmpty })
                {
                    Assert.Equal(4, s.Info.Turns, "turns without the prompt");
                    Assert.Equal(Role.User, s.Turns[0].Role, "turn 0's role");
                    Assert.Equal(Describe(fresh.Turns), Describe(s.Turns), "turns");
                    Assert.SequenceEqual(fresh.Tokens, s.Tokens, "tokens");
                }
            }
        }

        private static void LongPromptIsContextFull()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = ChatSession(engine, "chatml", Pirate))
            {
                s.Send("Tell me a story.", Fixture.Greedy(8));
                int[] before = s.Tokens;
                string turnsBefore = Describe(s.Turns);
                Assert.ThrowsStatus(ParleyStatus.ContextFull,
                    () => s.SetSystemPrompt(Fixture.TextBeyondContext(engine)),
                    "a prompt beyond the context");
                Assert.Equal(turnsBefore, Describe(s.Turns), "turns unchanged");
                Assert.SequenceEqual(before, s.Tokens, "tokens unchanged");
                s.Send("And then?", Fixture.Greedy(4));  // still usable
            }
        }

        private static void ReopenedSessionHasPrompt()
        {
            Fixture.WithStoreFile(store =>
            {
                string turns;
                using (Engine engine = Fixture.OpenEngine(store))
                using (Session s = ChatSession(engine, "chatml", "You tell stories.", "cs-pirate"))
                {
                    s.Send("Tell me a story.", Fixture.Greedy(8));
                    s.SetSystemPrompt(Pirate);
                    turns = Describe(s.Turns);
                }
                using (Engine engine = Fixture.OpenEngine(store))
                using (Session s = engine.OpenSession("cs-pirate"))
                {
                    Assert.Equal(Pirate, s.Turns[0].Text, "turn 0 after reopening");
                    Assert.Equal(turns, Describe(s.Turns), "turns after reopening");
                }
            });
        }
    }
}
