// GenerateOptions.JsonSchema (since 0.12): a Json reply is drawn among the tokens that keep it
// the start of an object the schema accepts, its properties in the schema's order. A schema
// implies Json whatever Format says. Keywords outside the subset are refused as Unsupported, a
// schema that is no schema as InvalidArgument, both naming the place, and a reply cut short
// goes on under the schema with Continue.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text.RegularExpressions;

namespace Parley.Tests
{
    internal static class JsonSchemaTests
    {
        private const string Prompt = "Once upon a time";

        // The tokens a whole object takes. The format lets up to 32 bytes of whitespace into
        // every gap between JSON tokens, and the story model fills most of each gap one space
        // a token: some 400 tokens for Character or Fixed, of which 30 or so are not spaces.
        private const int ObjectTokens = 480;

        // A game character's state, as a Pydantic model would describe it: an enum, an
        // integer, a boolean, a nested object with two required numbers and an Optional.
        private const string Character = @"{
          ""type"": ""object"",
          ""properties"": {
            ""mood"": {""enum"": [""happy"", ""sad"", ""angry""]},
            ""level"": {""type"": ""integer""},
            ""alive"": {""type"": ""boolean""},
            ""pos"": {""type"": ""object"",
                      ""properties"": {""x"": {""type"": ""number""},
                                     ""y"": {""type"": ""number""}},
                      ""required"": [""x"", ""y""]},
            ""note"": {""anyOf"": [{""type"": ""string""}, {""type"": ""null""}],
                       ""default"": null, ""title"": ""Note""}
          },
          ""required"": [""mood"", ""level"", ""alive"", ""pos""]
        }";

        // The members Character asks for, in its order; "/note" may be left out.
        private static readonly string[] CharacterPaths =
            { "/mood", "/level", "/alive", "/pos", "/pos/x", "/pos/y", "/note" };

        // Values only: a greedy reply has little to choose.
        private const string Fixed = @"{""properties"": {""kind"": {""const"": ""quest""},
            ""steps"": {""type"": ""array"", ""items"": {""enum"": [1, 2]},
                        ""minItems"": 2, ""maxItems"": 2}},
            ""required"": [""kind"", ""steps""], ""additionalProperties"": false}";

        public static void Register(TestRunner r)
        {
            r.Add("JsonSchema is null by default", NullByDefault);
            r.Add("sampled replies under a schema have its keys, order, types and values",
                  SampledRepliesFollowSchema);
            r.Add("a JsonSchema asks for Json with Format left Text", SchemaImpliesJson);
            r.Add("an empty JsonSchema is none", EmptySchemaIsNone);
            r.Add("a keyword outside the subset is Unsupported, naming the place",
                  UnsupportedKeyword);
            r.Add("a schema that is no schema is InvalidArgument, naming why", MalformedSchema);
            r.Add("CheckJsonSchema judges schemas without an engine", CheckWithoutEngine);
            r.Add("Continue under a schema completes a cut reply", ContinueCompletesCutReply);
        }

        private static GenerateOptions Schema(string schema, int maxTokens)
        {
            GenerateOptions o = Fixture.Greedy(maxTokens);
            o.IgnoreEos = false;
            o.JsonSchema = schema;
            return o;
        }

        // Sampled, with biases on the tokens that show '"', ',' or '}' alone: the story model
        // writes strings and digits on and on, and seldom ends them of its own accord.
        private static GenerateOptions Sampled(string schema, int maxTokens, ulong seed,
                                               IDictionary<int, float> ending)
        {
            GenerateOptions o = Schema(schema, maxTokens);
            o.Format = ReplyFormat.Json;
            o.Temperature = 1f;
            o.Seed = seed;
            o.LogitBias = ending;
            return o;
        }

        private static Dictionary<int, float> EndingBias(Engine engine, float bias)
        {
            var biases = new Dictionary<int, float>();
            foreach (string text in new[] { "\"", ",", "}" })
            {
                List<int> ids = FormatTests.IdsShowing(engine, text, false);
                Assert.True(ids.Count > 0, "the vocabulary has a token showing " + text);
                foreach (int id in ids) biases[id] = bias;
            }
            return biases;
        }

        // What Character asks, checked on a whole reply's text.
        private static void CheckCharacter(string reply)
        {
            List<string> paths = MiniJson.KeyPaths(reply);
            IEnumerable<string> asked = paths.Contains("/note")
                ? CharacterPaths : CharacterPaths.Where(p => p != "/note");
            Assert.Equal(string.Join(" ", asked), string.Join(" ", paths),
                         "the members, in the schema's order");
            var o = (Dictionary<string, object>)MiniJson.Parse(reply);
            Assert.True(new[] { "happy", "sad", "angry" }.Contains(o["mood"] as string),
                        "mood is one of the enum's values");
            // Integers come without fraction or exponent; MiniJson would read a long one as a
            // double, so the text says it. "alive" follows "level", as the schema orders them.
            Assert.True(o["level"] is long || o["level"] is double, "level is a number");
            Assert.True(Regex.IsMatch(reply, "\"level\"\\s*:\\s*-?(0|[1-9][0-9]*)\\s*,"),
                        "level is written as an integer");
            Assert.True(o["alive"] is bool, "alive is a boolean");
            var pos = o["pos"] as Dictionary<string, object>;
            Assert.True(pos != null, "pos is an object");
            Assert.True(pos["x"] is long || pos["x"] is double, "pos.x is a number");
            Assert.True(pos["y"] is long || pos["y"] is double, "pos.y is a number");
            if (o.ContainsKey("note"))
                Assert.True(o["note"] == null || o["note"] is string, "note is a string or null");
        }

        private static void NullByDefault()
        {
            Assert.True(new GenerateOptions().JsonSchema == null, "the default");
        }

        private static void SampledRepliesFollowSchema()
        {
            const int Seeds = 16;
            using (Engine engine = Fixture.OpenEngine())
            {
                Dictionary<int, float> ending = EndingBias(engine, 20f);
                int whole = 0, withNote = 0;
                for (ulong seed = 1; seed <= Seeds; seed++)
                {
                    using (Session s = Fixture.RawSession(engine))
                    {
                        var pieces = new List<string>();
                        GenerateOptions o = Sampled(Character, ObjectTokens, seed, ending);
                        string reply = s.Stream(Prompt, o, pieces.Add);
                        string what = " (seed " + seed + "): " + reply;
                        Assert.Equal(reply, string.Concat(pieces), "the streamed text" + what);
                        Assert.Equal(reply, s.Turns[1].Text, "the kept turn" + what);
                        if (s.LastStats.StopReason == StopReason.FormatEnd)
                        {
                            whole++;
                            try
                            {
                                CheckCharacter(reply);
                            }
                            catch (Exception e)
                            {
                                throw new Exception(e.Message + what, e);
                            }
                            if (reply.Contains("\"note\"")) withNote++;
                        }
                        else
                        {
                            Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason,
                                         "cut by MaxTokens" + what);
                        }
                    }
                }
                Console.WriteLine("         {0} of {1} replies whole, {2} with a note", whole,
                                  Seeds, withNote);
                Assert.True(whole >= 12, "most replies closed their object (" + whole + " of "
                                         + Seeds + ")");
            }
        }

        private static void SchemaImpliesJson()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                string expected = null;
                // -1: Format left as it is; 7 is no ReplyFormat, which the schema overrides too.
                foreach (int format in new[] { -1, 0, 1, 7 })
                {
                    using (Session s = Fixture.RawSession(engine))
                    {
                        GenerateOptions o = Schema(Fixed, ObjectTokens);
                        if (format >= 0) o.Format = (ReplyFormat)format;
                        string what = " (Format " + (format < 0 ? "left" : o.Format.ToString())
                                      + ")";
                        string reply = s.Send(Prompt, o);
                        Assert.Equal(StopReason.FormatEnd, s.LastStats.StopReason,
                                     "stop reason" + what);
                        Assert.Equal(format < 0 ? ReplyFormat.Text : (ReplyFormat)format,
                                     o.Format, "Format as set" + what);
                        var parsed = (Dictionary<string, object>)MiniJson.Parse(reply);
                        Assert.Equal("/kind /steps", string.Join(" ", MiniJson.KeyPaths(reply)),
                                     "members" + what);
                        Assert.Equal((object)"quest", parsed["kind"], "kind" + what);
                        var steps = (List<object>)parsed["steps"];
                        Assert.Equal(2, steps.Count, "steps" + what);
                        foreach (object step in steps)
                            Assert.True(step.Equals(1L) || step.Equals(2L), "a step" + what);
                        if (expected == null) expected = reply;
                        Assert.Equal(expected, reply, "the greedy reply" + what);
                        // The enumerated form converts the options alike.
                        using (Session t = Fixture.RawSession(engine))
                        {
                            Assert.Equal(reply, string.Concat(t.Stream(Prompt, o)),
                                         "enumerated" + what);
                            Assert.Equal(StopReason.FormatEnd, t.LastStats.StopReason,
                                         "enumerated stop reason" + what);
                        }
                    }
                }
            }
        }

        private static void EmptySchemaIsNone()
        {
            using (Engine engine = Fixture.OpenEngine())
            {
                var replies = new List<string>();
                foreach (string schema in new[] { null, "" })
                {
                    using (Session s = Fixture.RawSession(engine))
                    {
                        GenerateOptions o = Schema(schema, 20);
                        o.IgnoreEos = true;
                        replies.Add(s.Send(Prompt, o));
                        Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason,
                                     "a plain reply, schema " + (schema ?? "null"));
                    }
                }
                Assert.Equal(replies[0], replies[1], "\"\" as null");
                Assert.True(!replies[0].TrimStart().StartsWith("{", StringComparison.Ordinal),
                            "plain text: " + replies[0]);
            }
        }

        private static void UnsupportedKeyword()
        {
            var cases = new[]
            {
                new { Schema = @"{""properties"": {""n"": {""type"": ""string"",
                                  ""maxLength"": 8}}}",
                      Says = "json_schema at \"/properties/n\": \"maxLength\"" },
                new { Schema = @"{""properties"": {""pos"": {""properties"": {""x"":
                                  {""type"": ""number"", ""minimum"": 0}}}}}",
                      Says = "json_schema at \"/properties/pos/properties/x\": \"minimum\"" },
                new { Schema = @"{""$defs"": {""P"": {""type"": ""string"", ""pattern"": ""a""}},
                                  ""properties"": {""p"": {""$ref"": ""#/$defs/P""}}}",
                      Says = "\"pattern\"" },
                new { Schema = @"{""allOf"": [{""type"": ""object""}]}",
                      Says = "\"allOf\"" },
            };
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                foreach (var c in cases)
                {
                    GenerateOptions o = Schema(c.Schema, 10);
                    ParleyException e = Assert.ThrowsStatus(ParleyStatus.Unsupported,
                        () => s.Send(Prompt, o), "Send, schema " + c.Schema);
                    Assert.True(e.Message.Contains(c.Says) && e.Message.Contains("not supported"),
                                "the message names the place and the keyword: " + e.Message);
                    Assert.True(e.Reply == null, "nothing kept");
                    Assert.ThrowsStatus(ParleyStatus.Unsupported,
                        () => s.Stream(Prompt, o).ToArray(), "Stream, schema " + c.Schema);
                    ParleyException check = Assert.ThrowsStatus(ParleyStatus.Unsupported,
                        () => GenerateOptions.CheckJsonSchema(c.Schema), "CheckJsonSchema");
                    Assert.True(check.Message.Contains(c.Says),
                                "CheckJsonSchema's message: " + check.Message);
                    Assert.Equal(0, s.Info.Turns, "no turn");
                }
                s.Send(Prompt, Fixture.Greedy(3));
                int[] tokens = s.Tokens;
                Assert.ThrowsStatus(ParleyStatus.Unsupported,
                    () => s.Continue(Schema(cases[0].Schema, 10)), "Continue");
                Assert.SequenceEqual(tokens, s.Tokens, "the tokens after Continue");
            }
        }

        private static void MalformedSchema()
        {
            var cases = new[]
            {
                new { Schema = "{\"type\": ", Says = "json_schema is not JSON" },
                new { Schema = "{\"type\": \"array\"}", Says = "no object satisfies the schema" },
                new { Schema = "{\"properties\": {\"a\": {\"type\": 5}}}",
                      Says = "json_schema at \"/properties/a\"" },
                new { Schema = "{\"properties\": {\"a\": {\"$ref\": \"#/$defs/None\"}}}",
                      Says = "json_schema at \"/properties/a\"" },
            };
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                foreach (var c in cases)
                {
                    GenerateOptions o = Schema(c.Schema, 10);
                    ParleyException e = Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => s.Send(Prompt, o), "Send, schema " + c.Schema);
                    Assert.True(e.Message.Contains(c.Says), "the message says why: " + e.Message);
                    Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                        () => GenerateOptions.CheckJsonSchema(c.Schema), "CheckJsonSchema");
                    Assert.Equal(0, s.Info.Turns, "no turn");
                }
                // The binding's own refusals: text C cannot carry.
                Assert.Throws<ArgumentException>(() => s.Send(Prompt, Schema("{}\0", 10)),
                                                 "a NUL character");
                Assert.Throws<ArgumentException>(() => s.Send(Prompt, Schema("{\"\ud800\"}", 10)),
                                                 "a lone surrogate");
                Assert.Equal(0, s.Info.Turns, "no turn after the binding's refusals");
                s.Send(Prompt, Schema(Fixed, ObjectTokens));
                Assert.Equal(StopReason.FormatEnd, s.LastStats.StopReason, "the session goes on");
            }
        }

        private static void CheckWithoutEngine()
        {
            GenerateOptions.CheckJsonSchema(Character);
            GenerateOptions.CheckJsonSchema(Fixed);
            GenerateOptions.CheckJsonSchema("true");
            Assert.Throws<ArgumentNullException>(() => GenerateOptions.CheckJsonSchema(null),
                                                 "null");
            Assert.ThrowsStatus(ParleyStatus.InvalidArgument,
                                () => GenerateOptions.CheckJsonSchema(""), "\"\"");
            Assert.Throws<ArgumentException>(() => GenerateOptions.CheckJsonSchema("{}\0"),
                                             "a NUL character");
        }

        private static void ContinueCompletesCutReply()
        {
            using (Engine engine = Fixture.OpenEngine())
            using (Session s = Fixture.RawSession(engine))
            {
                Dictionary<int, float> ending = EndingBias(engine, 20f);
                GenerateOptions first = Schema(Character, 6);
                first.ReplyPrefix = "{\"mood\": \"";
                string whole = s.Send(Prompt, first);
                Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason, "cut: " + whole);
                bool closed = false;
                for (int i = 0; i < 30 && !closed; i++)
                {
                    var pieces = new List<string>();
                    string more = s.Continue(Sampled(Character, 20, 100 + (ulong)i, ending),
                                             pieces.Add);
                    Assert.Equal(more, string.Concat(pieces), "the streamed text");
                    whole += more;
                    closed = s.LastStats.StopReason == StopReason.FormatEnd;
                    if (!closed)
                        Assert.Equal(StopReason.MaxTokens, s.LastStats.StopReason,
                                     "cut again: " + whole);
                }
                Assert.True(closed, "the object closed: " + whole);
                Assert.Equal(whole, s.Turns[1].Text, "the kept turn");
                CheckCharacter(whole);
                // Once whole, going on adds nothing.
                Assert.Equal("", s.Continue(Schema(Character, 20)), "continued");
                Assert.Equal(StopReason.FormatEnd, s.LastStats.StopReason, "continued reason");
                Assert.Equal(0, s.LastStats.GeneratedTokens, "continued tokens");
            }
        }
    }
}
