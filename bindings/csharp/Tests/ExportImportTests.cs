// Session.Export and Engine.ImportSession (since 0.7): a conversation as portable JSON, and a
// session made of it again.
using System;
using System.Collections.Generic;
using System.Linq;

namespace Parley.Tests
{
    internal static class ExportImportTests
    {
        private const string SystemPrompt = "You tell stories.";

        private static readonly string[] Keys =
        {
            "format", "version", "id", "chat_template", "system_prompt", "cache_scope", "overflow",
            "model_fingerprint", "created_unix_ms", "messages",
        };

        public static void Register(TestRunner r)
        {
            r.Add("an import keeps tokens and turns, and replies as the original", RoundTrip);
            r.Add("the exported JSON parses and has the documented fields", JsonFields);
            r.Add("texts-only JSON is added as AddExchange adds it", TextsOnly);
            r.Add("without an id the conversation keeps its own", KeepsItsId);
            r.Add("malformed JSON is InvalidArgument naming the field", MalformedJson);
            r.Add("an id already open is refused", IdInUse);
            r.Add("with a store the import is stored and its KV rebuilt", StoredImport);
        }

        // A session with a system prompt and two greedy exchanges.
        private static Session TwoTurns(Engine engine, string id = null)
        {
            var options = new SessionOptions { Id = id, SystemPrompt = SystemPrompt };
            Session s = engine.CreateSession(options);
            s.Send("Once upon a time", Fixture.Greedy(32));
            s.Send(" The dog", Fixture.Greedy(32));
            return s;
        }

        private static void SameTurns(IList<Turn> expected, IList<Turn> actual, string what)
        {
            Assert.Equal(expected.Count, actual.Count, what + " (count)");
            for (int i = 0; i < expected.Count; i++)
            {
                Assert.Equal(expected[i].Role, actual[i].Role, what + " [" + i + "] role");
                Assert.Equal(expected[i].Text, actual[i].Text, what + " [" + i + "] text");
            }
        }

        private static void RoundTrip()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = TwoTurns(engine))
            using (Session copy = engine.ImportSession(s.Export(), "copy"))
            {
                Assert.Equal("copy", copy.Id, "the new id");
                Assert.SequenceEqual(s.Tokens, copy.Tokens, "tokens");
                SameTurns(s.Turns, copy.Turns, "turns");
                Assert.Equal(Role.System, copy.Turns[0].Role, "the system prompt comes along");
                string reply = s.Send(" Then", Fixture.Greedy(32));
                Assert.Equal(reply, copy.Send(" Then", Fixture.Greedy(32)), "the next reply");
                // The ids were kept; without a store the KV is computed anew.
                Assert.Equal(KvSource.New, copy.LastStats.KvSource, "KV source");
                Assert.SequenceEqual(s.Tokens, copy.Tokens, "tokens after the reply");
            }
        }

        private static void JsonFields()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = TwoTurns(engine, "story"))
            {
                var data = (Dictionary<string, object>)MiniJson.Parse(s.Export());
                Assert.Equal(string.Join(",", Keys.OrderBy(k => k, StringComparer.Ordinal)),
                             string.Join(",", data.Keys.OrderBy(k => k, StringComparer.Ordinal)),
                             "fields");
                Assert.Equal("parley-conversation", (string)data["format"], "format");
                Assert.Equal(1L, (long)data["version"], "version");
                Assert.Equal("story", (string)data["id"], "id");
                Assert.Equal(SystemPrompt, (string)data["system_prompt"], "system_prompt");
                string overflow = (string)data["overflow"];
                Assert.True(overflow == "error" || overflow == "drop_oldest",
                            "overflow " + overflow);
                string fingerprint = (string)data["model_fingerprint"];
                Assert.Equal(16, fingerprint.Length, "fingerprint digits");
                Assert.True(fingerprint.All(Uri.IsHexDigit), "a hex fingerprint");
                Assert.True(data["created_unix_ms"] is long, "created_unix_ms is an integer");

                var messages = (List<object>)data["messages"];
                IList<Turn> turns = s.Turns;
                Assert.Equal(turns.Count, messages.Count, "one message a turn");
                var ids = new List<int>();
                for (int i = 0; i < messages.Count; i++)
                {
                    var m = (Dictionary<string, object>)messages[i];
                    string role = turns[i].Role.ToString().ToLowerInvariant();
                    Assert.Equal(role, (string)m["role"], "messages[" + i + "].role");
                    Assert.Equal(turns[i].Text, (string)m["text"], "messages[" + i + "].text");
                    object tokens;
                    if (m.TryGetValue("tokens", out tokens))
                        ids.AddRange(((List<object>)tokens).Select(t => (int)(long)t));
                    if (turns[i].Role == Role.Assistant)
                        Assert.True(m["closed"] is bool, "messages[" + i + "].closed");
                }
                Assert.SequenceEqual(s.Tokens, ids.ToArray(), "the messages' tokens");
            }
        }

        private static void TextsOnly()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                Dictionary<string, object> data;
                IList<Turn> turns;
                using (Session s = TwoTurns(engine))
                {
                    data = (Dictionary<string, object>)MiniJson.Parse(s.Export());
                    turns = s.Turns;
                }
                foreach (object m in (List<object>)data["messages"])
                    ((Dictionary<string, object>)m).Remove("tokens");
                using (Session imported = engine.ImportSession(MiniJson.Write(data), "texts"))
                using (Session built = engine.CreateSession(new SessionOptions
                {
                    SystemPrompt = SystemPrompt,
                    ChatTemplate = (string)data["chat_template"],
                }))
                {
                    SameTurns(turns, imported.Turns, "turns");
                    built.AddExchange(turns[1].Text, turns[2].Text);
                    built.AddExchange(turns[3].Text, turns[4].Text);
                    Assert.SequenceEqual(built.Tokens, imported.Tokens, "tokens");
                }
            }
        }

        private static void KeepsItsId()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string json;
                int[] tokens;
                using (Session s = TwoTurns(engine, "saved"))
                {
                    json = s.Export();
                    tokens = s.Tokens;
                }
                using (Session again = engine.ImportSession(json))
                {
                    Assert.Equal("saved", again.Id, "the conversation's id");
                    Assert.SequenceEqual(tokens, again.Tokens, "tokens");
                }
            }
        }

        private static void MalformedJson()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string json;
                using (Session s = TwoTurns(engine)) json = s.Export();
                var data = (Dictionary<string, object>)MiniJson.Parse(json);
                var messages = (List<object>)data["messages"];
                ((Dictionary<string, object>)messages[1])["role"] = "narrator";
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => engine.ImportSession(MiniJson.Write(data), "bad"), "a bad role");
                Assert.True(e.Message.Contains("messages[1].role"),
                            "the field named: " + e.Message);
                e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => engine.ImportSession("{", "bad"), "not JSON");
                Assert.True(e.Message.Contains("not valid JSON"), "says so: " + e.Message);
                // "" is not "keep the id": null is.
                Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => engine.ImportSession(json, ""), "an empty id");
                var n = Assert.Throws<ArgumentNullException>(() => engine.ImportSession(null),
                                                             "null JSON");
                Assert.Equal("json", n.ParamName, "the parameter named");
                Assert.Throws<ArgumentException>(() => engine.ImportSession(json + "\0"),
                                                 "JSON with a NUL");
            }
        }

        private static void IdInUse()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = TwoTurns(engine, "open"))
            {
                string json = s.Export();
                ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                    () => engine.ImportSession(json), "the conversation's own id, still open");
                Assert.True(e.Message.Contains("open"), "the id named: " + e.Message);
                using (engine.CreateSession(new SessionOptions { Id = "taken" }))
                {
                    e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => engine.ImportSession(json, "taken"), "another open session's id");
                    Assert.True(e.Message.Contains("taken"), "the id named: " + e.Message);
                }
            }
        }

        private static void StoredImport()
        {
            string json, reply;
            int[] tokens;
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = TwoTurns(engine))
            {
                json = s.Export();
                tokens = s.Tokens;
                reply = s.Send(" Then", Fixture.Greedy(32));
            }
            Fixture.WithStoreFile(store =>
            {
                using (Engine engine = Fixture.OpenEngine(store))
                {
                    using (Session moved = engine.ImportSession(json, "moved"))
                    {
                        Assert.SequenceEqual(tokens, moved.Tokens, "tokens");
                        Assert.Equal(reply, moved.Send(" Then", Fixture.Greedy(32)), "the reply");
                        Assert.Equal(KvSource.Rebuilt, moved.LastStats.KvSource, "KV source");
                    }
                    Assert.Equal("moved", string.Join(",", engine.Sessions), "stored ids");
                }
            });
        }
    }
}
