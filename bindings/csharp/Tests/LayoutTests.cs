// The P/Invoke layer must match the library: every exported parley_* function is declared, and
// the C# structs match parley.h byte for byte (every size and field offset is compared with
// what the C compiler produced for the same header, layout_probe.c).
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;

namespace Parley.Tests
{
    internal static class LayoutTests
    {
        public static void Register(TestRunner r)
        {
            r.Add("every exported function is declared", EveryExportIsDeclared);
            r.Add("structs match the C layout", StructsMatchC);
            r.Add("the 0.3 to 0.12 fields and structs are where parley.h documents them",
                  AppendedFields);
            r.Add("the 0.8 session info fields are where parley.h documents them",
                  SessionInfoFields);
            r.Add("the 0.10 engine options fields are where parley.h documents them",
                  EngineOptionsFields);
        }

        // parley_engine_options since 0.10: the load progress callback and its user pointer
        // came last.
        private static void EngineOptionsFields()
        {
            if (IntPtr.Size != 8) throw new SkipException("the documented layouts are for 64-bit");
            Type options = NativeType(typeof(Engine).Assembly, "parley_engine_options");
            Assert.Equal(72, Marshal.SizeOf(options), "sizeof parley_engine_options");
            string[] fields = { "kv_budget_bytes", "idle_spill_ms", "context_length",
                                "on_load_progress", "load_progress_user" };
            int[] offsets = { 40, 48, 52, 56, 64 };
            for (int i = 0; i < fields.Length; i++)
                Assert.Equal(offsets[i], (int)Marshal.OffsetOf(options, fields[i]),
                             "offsetof " + fields[i]);
        }

        // parley_session_info since 0.8: overflow took reserved0's place, chat_template came last.
        private static void SessionInfoFields()
        {
            if (IntPtr.Size != 8) throw new SkipException("the documented layouts are for 64-bit");
            Type info = NativeType(typeof(Engine).Assembly, "parley_session_info");
            Assert.Equal(200, Marshal.SizeOf(info), "sizeof parley_session_info");
            string[] fields = { "id", "n_turns", "n_tokens", "state", "overflow",
                                "kv_bytes_resident", "kv_bytes_stored", "chat_template" };
            int[] offsets = { 8, 136, 140, 144, 148, 152, 160, 168 };
            for (int i = 0; i < fields.Length; i++)
                Assert.Equal(offsets[i], (int)Marshal.OffsetOf(info, fields[i]),
                             "offsetof " + fields[i]);
        }

        // The sizes and offsets parley.h documents for 64-bit targets (tests/abi asserts the
        // same): new fields go after the old ones, whose offsets do not move.
        private static void AppendedFields()
        {
            if (IntPtr.Size != 8) throw new SkipException("the documented layouts are for 64-bit");
            Assembly parley = typeof(Engine).Assembly;
            Type options = NativeType(parley, "parley_generate_options");
            Type stats = NativeType(parley, "parley_turn_stats");
            Type bias = NativeType(parley, "parley_logit_bias");
            Type stored = NativeType(parley, "parley_stored_session_info");
            Assert.Equal(96, Marshal.SizeOf(options), "sizeof parley_generate_options");
            Assert.Equal(44, (int)Marshal.OffsetOf(options, "ignore_eos"), "offsetof ignore_eos");
            Assert.Equal(48, (int)Marshal.OffsetOf(options, "stop"), "offsetof stop");
            Assert.Equal(56, (int)Marshal.OffsetOf(options, "n_stop"), "offsetof n_stop");
            Assert.Equal(60, (int)Marshal.OffsetOf(options, "reserved0"), "offsetof reserved0");
            Assert.Equal(64, (int)Marshal.OffsetOf(options, "reply_prefix"),
                         "offsetof reply_prefix");
            Assert.Equal(72, (int)Marshal.OffsetOf(options, "logit_bias"), "offsetof logit_bias");
            Assert.Equal(80, (int)Marshal.OffsetOf(options, "n_logit_bias"),
                         "offsetof n_logit_bias");
            // Since 0.11 format holds reserved1's place.
            Assert.Equal(84, (int)Marshal.OffsetOf(options, "format"), "offsetof format");
            // Since 0.12 json_schema comes last.
            Assert.Equal(88, (int)Marshal.OffsetOf(options, "json_schema"),
                         "offsetof json_schema");
            Assert.Equal(8, Marshal.SizeOf(bias), "sizeof parley_logit_bias");
            Assert.Equal(0, (int)Marshal.OffsetOf(bias, "token"), "offsetof token");
            Assert.Equal(4, (int)Marshal.OffsetOf(bias, "bias"), "offsetof bias");
            Assert.Equal(64, Marshal.SizeOf(stats), "sizeof parley_turn_stats");
            Assert.Equal(48, (int)Marshal.OffsetOf(stats, "kv_source"), "offsetof kv_source");
            Assert.Equal(56, (int)Marshal.OffsetOf(stats, "stop_reason"), "offsetof stop_reason");
            Assert.Equal(60, (int)Marshal.OffsetOf(stats, "stop_index"), "offsetof stop_index");
            Assert.Equal(48, Marshal.SizeOf(stored), "sizeof parley_stored_session_info");
            string[] storedFields = { "created_unix_ms", "updated_unix_ms", "n_turns", "is_open",
                                      "kv_bytes_stored", "same_model", "reserved0" };
            int[] storedOffsets = { 8, 16, 24, 28, 32, 40, 44 };
            for (int i = 0; i < storedFields.Length; i++)
                Assert.Equal(storedOffsets[i], (int)Marshal.OffsetOf(stored, storedFields[i]),
                             "offsetof " + storedFields[i]);
        }

        private static void EveryExportIsDeclared()
        {
            Type native = typeof(Engine).Assembly.GetType("Parley.NativeMethods");
            var declared = new SortedSet<string>(native
                .GetMethods(BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public)
                .Where(m => m.GetCustomAttributes(typeof(DllImportAttribute), false).Length > 0)
                .Select(m => m.Name));
            var exported = new SortedSet<string>(File.ReadAllLines(Fixture.SymbolsFile).Where(l => l.Length > 0));
            Assert.True(exported.Count > 0, "the library exports functions");
            Assert.Equal(string.Join(" ", exported), string.Join(" ", declared), "declared functions");
        }

        private static void StructsMatchC()
        {
            Assembly parley = typeof(Engine).Assembly;
            var checkedStructs = new HashSet<Type>();
            var fieldCounts = new Dictionary<Type, int>();
            foreach (string line in File.ReadAllLines(Fixture.LayoutFile))
            {
                string[] parts = line.Split(' ');
                string cName = parts[0];
                int value = int.Parse(parts[1]);
                int dot = cName.IndexOf('.');
                string structName = dot < 0 ? cName : cName.Substring(0, dot);
                Type t = NativeType(parley, structName);
                if (dot < 0)
                {
                    Assert.Equal(value, Marshal.SizeOf(t), "sizeof " + structName);
                    checkedStructs.Add(t);
                }
                else
                {
                    string field = cName.Substring(dot + 1);
                    Assert.Equal(value, (int)Marshal.OffsetOf(t, field), "offsetof " + cName);
                    int n;
                    fieldCounts.TryGetValue(t, out n);
                    fieldCounts[t] = n + 1;
                }
            }
            foreach (Type t in parley.GetTypes().Where(x => x.IsValueType && x.Name.StartsWith("Native")))
            {
                Assert.True(checkedStructs.Contains(t), t.Name + " is covered by layout_probe.c");
                int instanceFields = t.GetFields(BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic).Length;
                Assert.Equal(fieldCounts[t], instanceFields, t.Name + " has exactly the C fields");
            }
        }

        // parley_engine_options -> Parley.NativeEngineOptions
        private static Type NativeType(Assembly parley, string cStruct)
        {
            string pascal = string.Concat(cStruct.Substring("parley_".Length).Split('_')
                .Select(w => char.ToUpperInvariant(w[0]) + w.Substring(1)));
            Type t = parley.GetType("Parley.Native" + pascal);
            if (t == null) throw new Exception("no C# struct for " + cStruct);
            return t;
        }
    }
}
