// Session.Overflow (since 0.8): the policy for a message that does not fit the context, told by
// SessionInfo, changed by a setter and kept by the store; and SessionInfo.ChatTemplate.
using System;
using System.Collections.Generic;

namespace Parley.Tests
{
    internal static class OverflowTests
    {
        // A small context fills after a few exchanges; the Q8_0 weights keep the tests quick.
        private const int Context = 128;
        private const string Message = "Tell me about the dog.";

        public static void Register(TestRunner r)
        {
            r.Add("Session.Overflow round-trips", PolicyRoundTrips);
            r.Add("an Overflow that is no OverflowPolicy is refused as at creation",
                  UnknownPolicyIsRefused);
            r.Add("Overflow of a disposed session throws ObjectDisposedException",
                  DisposedSessionThrows);
            r.Add("Info.ChatTemplate is the session's template", InfoTellsTheTemplate);
            r.Add("the overflow policy and the template survive reopening", SurviveReopening);
            r.Add("Error refuses what no longer fits; DropOldest takes it",
                  ErrorRefusesDropOldestTakes);
            r.Add("a conversation longer than the context does not open (ContextFull)",
                  LongConversationDoesNotOpen);
        }

        private static Engine OpenSmallEngine(string storePath = null, int context = Context)
        {
            string model = Fixture.SharedFile("models/stories260k/stories260k-q8_0.gguf");
            return new Engine(model, new EngineOptions
            {
                Device = "cpu", Threads = 2, ContextLength = context, StorePath = storePath,
            });
        }

        private static Session ChatmlSession(Engine engine, string id = null,
                                             OverflowPolicy overflow = OverflowPolicy.Error)
        {
            return engine.CreateSession(new SessionOptions
            {
                Id = id, ChatTemplate = "chatml", Overflow = overflow,
            });
        }

        private static GenerateOptions Short()
        {
            return Fixture.Greedy(8);
        }

        // Sends Message until one more would not fit; returns the number of turns then.
        private static int Fill(Session s)
        {
            while (s.CountTokens(Message).ContextLeft > 0) s.Send(Message, Short());
            return s.Info.Turns;
        }

        private static void PolicyRoundTrips()
        {
            using (Engine engine = OpenSmallEngine())
            {
                using (Session s = ChatmlSession(engine))
                {
                    Assert.Equal(OverflowPolicy.Error, s.Overflow, "the default");
                    Assert.Equal(OverflowPolicy.Error, s.Info.Overflow, "Info.Overflow");
                    s.Overflow = OverflowPolicy.DropOldest;
                    Assert.Equal(OverflowPolicy.DropOldest, s.Overflow, "after setting it");
                    Assert.Equal(OverflowPolicy.DropOldest, s.Info.Overflow, "Info after it");
                    s.Overflow = OverflowPolicy.DropOldest;  // the same again is fine
                    s.Overflow = OverflowPolicy.Error;
                    Assert.Equal(OverflowPolicy.Error, s.Overflow, "set back");
                }
                using (Session s = ChatmlSession(engine, null, OverflowPolicy.DropOldest))
                    Assert.Equal(OverflowPolicy.DropOldest, s.Overflow, "from SessionOptions");
            }
        }

        private static void UnknownPolicyIsRefused()
        {
            using (Engine engine = OpenSmallEngine())
            using (Session s = ChatmlSession(engine, null, OverflowPolicy.DropOldest))
            {
                foreach (int bad in new[] { 2, 7, -1 })
                {
                    var policy = (OverflowPolicy)bad;
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => ChatmlSession(engine, null, policy).Dispose(),
                        "creating a session with overflow " + bad);
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Overflow = policy, "setting overflow " + bad);
                    Assert.Equal(OverflowPolicy.DropOldest, s.Overflow, "unchanged");
                }
            }
        }

        private static void DisposedSessionThrows()
        {
            using (Engine engine = OpenSmallEngine())
            {
                Session s = ChatmlSession(engine);
                s.Dispose();
                Assert.Throws<ObjectDisposedException>(() => { var unused = s.Overflow; },
                                                       "reading Overflow");
                Assert.Throws<ObjectDisposedException>(
                    () => s.Overflow = OverflowPolicy.DropOldest, "setting Overflow");
            }
        }

        private static void InfoTellsTheTemplate()
        {
            using (Engine engine = OpenSmallEngine())
            {
                foreach (string template in new[] { "raw", "llama2", "chatml" })
                {
                    using (Session s = engine.CreateSession(
                        new SessionOptions { ChatTemplate = template }))
                    {
                        Assert.Equal(template, s.Info.ChatTemplate, "a new session");
                        s.Send("Once", Short());
                        Assert.Equal(template, s.Info.ChatTemplate, "after a turn");
                    }
                }
                using (Session s = engine.CreateSession())
                {
                    string model = engine.ModelInfo.ChatTemplate;
                    Assert.True(model.Length > 0, "the model names a template");
                    Assert.Equal(model, s.Info.ChatTemplate, "without one: the model's");
                }
            }
        }

        private static void SurviveReopening()
        {
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = OpenSmallEngine(store))
                {
                    using (Session s = ChatmlSession(engine, "changed"))
                    {
                        s.Send("Once", Short());
                        s.Overflow = OverflowPolicy.DropOldest;
                    }
                    using (Session s = engine.CreateSession(new SessionOptions
                    {
                        Id = "created", ChatTemplate = "llama2",
                        Overflow = OverflowPolicy.DropOldest,
                    }))
                    {
                        s.Overflow = OverflowPolicy.Error;
                        s.Overflow = OverflowPolicy.DropOldest;
                    }
                    using (Session s = engine.CreateSession(new SessionOptions
                    {
                        Id = "set-back", ChatTemplate = "raw", Overflow = OverflowPolicy.DropOldest,
                    }))
                    {
                        s.Overflow = OverflowPolicy.Error;
                    }
                }
                using (Engine engine = OpenSmallEngine(store))
                {
                    CheckReopened(engine, "changed", OverflowPolicy.DropOldest, "chatml");
                    CheckReopened(engine, "created", OverflowPolicy.DropOldest, "llama2");
                    CheckReopened(engine, "set-back", OverflowPolicy.Error, "raw");
                }
            });
        }

        private static void CheckReopened(Engine engine, string id, OverflowPolicy overflow,
                                          string template)
        {
            using (Session s = engine.OpenSession(id))
            {
                Assert.Equal(overflow, s.Overflow, id + ": overflow");
                Assert.Equal(template, s.Info.ChatTemplate, id + ": template");
                var data = (Dictionary<string, object>)MiniJson.Parse(s.Export());
                string exported = overflow == OverflowPolicy.Error ? "error" : "drop_oldest";
                Assert.Equal(exported, (string)data["overflow"], id + ": exported overflow");
            }
        }

        private static void ErrorRefusesDropOldestTakes()
        {
            using (Engine engine = OpenSmallEngine())
            using (Session s = Fixture.RawSession(engine))  // no markers: several exchanges fit
            {
                int full = Fill(s);
                Assert.True(full >= 4, "two exchanges fit, so one can go for the next (" +
                            full + " turns)");
                int[] tokens = s.Tokens;
                Assert.ThrowsStatus(ParleyStatus.ContextFull, () => s.Send(Message, Short()),
                                    "a message that no longer fits");
                Assert.SequenceEqual(tokens, s.Tokens, "a refused message changes nothing");
                Assert.Equal(full, s.Info.Turns, "turns after the refusal");

                s.Overflow = OverflowPolicy.DropOldest;
                Assert.SequenceEqual(tokens, s.Tokens, "the change itself drops nothing");
                s.Send(Message, Short());
                IList<Turn> turns = s.Turns;
                Assert.Equal(Message, turns[turns.Count - 2].Text, "the message was taken");
                Assert.True(s.Info.Turns <= full, "at least the oldest exchange went");
                Assert.True(s.Info.Tokens <= Context, "within the context");
                for (int i = 0; i < 4; i++)  // and so it goes on, never past the context
                {
                    s.Send(Message, Short());
                    Assert.True(s.Info.Turns <= full, "turns after send " + i);
                    Assert.True(s.Info.Tokens <= Context, "tokens after send " + i);
                }

                s.Overflow = OverflowPolicy.Error;  // and back: what does not fit is refused
                Fill(s);
                Assert.ThrowsStatus(ParleyStatus.ContextFull, () => s.Send(Message, Short()),
                                    "a message that does not fit, with Error again");
            }
        }

        private static void LongConversationDoesNotOpen()
        {
            Fixture.WithStoreFile(store =>
            {
                int[] tokens;
                using (Engine engine = OpenSmallEngine(store, 2 * Context))
                using (Session s = Fixture.RawSession(engine, "long"))
                {
                    while (s.Info.Tokens <= Context) s.Send(" and then", Fixture.Greedy(32));
                    tokens = s.Tokens;
                }
                using (Engine engine = OpenSmallEngine(store))
                {
                    // Corrupt before 0.8.
                    Assert.ThrowsStatus(ParleyStatus.ContextFull, () => engine.OpenSession("long"),
                                        "opening it with a smaller context");
                    Assert.Equal("long", string.Join(",", engine.Sessions), "still stored");
                }
                using (Engine engine = OpenSmallEngine(store, 2 * Context))
                using (Session s = engine.OpenSession("long"))
                    Assert.SequenceEqual(tokens, s.Tokens, "an engine whose context holds it");
            });
        }
    }
}
