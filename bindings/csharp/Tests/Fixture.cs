// Where the reference files are, and the engines the tests open on them. The reference folder
// (../shared next to the repository) is optional: without it the model tests are skipped
// visibly, except in CI (CI=true), where its absence is a failure.
using System;
using System.IO;
using System.Text;

namespace Parley.Tests
{
    internal static class Fixture
    {
        public static string SharedDir;   // set from the command line
        public static string LayoutFile;  // the C compiler's struct layout (layout_probe.c)
        public static string SymbolsFile; // the functions the library exports

        public static string ModelPath
        {
            get { return SharedFile("models/stories260k/stories260k-f32.gguf"); }
        }

        public static string GoldenPath
        {
            get { return SharedFile("golden/stories260k_greedy.jsonl"); }
        }

        public static string SharedFile(string relative)
        {
            string path = Path.Combine(SharedDir ?? "", relative);
            if (File.Exists(path)) return path;
            string why = "reference file " + path + " is absent";
            if (Environment.GetEnvironmentVariable("CI") == "true") throw new Exception(why + " (required in CI)");
            throw new SkipException(why);
        }

        // CPU with F32 KV: the greedy goldens are exact only with unrounded K/V.
        public static Engine OpenEngine(string storePath = null)
        {
            return new Engine(ModelPath, new EngineOptions { Device = "cpu", KvType = KvType.F32, Threads = 2, StorePath = storePath });
        }

        public static Session RawSession(Engine engine, string id = null)
        {
            return engine.CreateSession(new SessionOptions { ChatTemplate = "raw", Id = id });
        }

        public static GenerateOptions Greedy(int maxTokens)
        {
            return new GenerateOptions { Temperature = 0, MaxTokens = maxTokens, IgnoreEos = true };
        }

        // Text of far more tokens than the engine's context (about 8 characters per token of room).
        public static string TextBeyondContext(Engine engine)
        {
            var text = new StringBuilder();
            int room = engine.ModelInfo.ContextLength;
            while (text.Length < 8 * room) text.Append("and the dog ran ");
            return text.ToString();
        }

        // Runs `body` with the path of a store file in a fresh temporary folder, removed after.
        public static void WithStoreFile(Action<string> body)
        {
            string dir = NewTempDir();
            try
            {
                body(Path.Combine(dir, "chats.sqlite"));
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        public static string NewTempDir()
        {
            string dir = Path.Combine(Path.GetTempPath(), "parley-cs-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
            return dir;
        }
    }
}
