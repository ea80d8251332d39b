// Reads one record of golden/stories260k_greedy.jsonl (written by llama2.c's run.c): just
// enough JSON parsing for its integer arrays.
using System;
using System.Collections.Generic;
using System.IO;

namespace Parley.Tests
{
    internal sealed class Golden
    {
        public int[] PromptIds;
        public int[] GeneratedIds;

        public static Golden Load(string path, string name)
        {
            foreach (string line in File.ReadLines(path))
            {
                if (line.IndexOf("\"name\": \"" + name + "\"", StringComparison.Ordinal) < 0) continue;
                return new Golden
                {
                    PromptIds = IntArray(line, "prompt_ids"),
                    GeneratedIds = IntArray(line, "generated_ids"),
                };
            }
            throw new Exception("no golden named " + name + " in " + path);
        }

        private static int[] IntArray(string json, string key)
        {
            string marker = "\"" + key + "\": [";
            int start = json.IndexOf(marker, StringComparison.Ordinal);
            if (start < 0) throw new Exception("golden has no " + key);
            start += marker.Length;
            int end = json.IndexOf(']', start);
            var values = new List<int>();
            foreach (string item in json.Substring(start, end - start).Split(','))
            {
                if (item.Trim().Length > 0) values.Add(int.Parse(item.Trim()));
            }
            return values.ToArray();
        }
    }
}
