// A self-checking console test runner: runs each named test, prints ok / FAIL / SKIPPED, and
// exits non-zero when any test failed. No test framework needed, so it runs on a bare Mono.
using System;
using System.Collections.Generic;
using System.Diagnostics;

namespace Parley.Tests
{
    internal sealed class SkipException : Exception
    {
        public SkipException(string why) : base(why) { }
    }

    internal static class Assert
    {
        public static void True(bool condition, string what)
        {
            if (!condition) throw new Exception("expected: " + what);
        }

        public static void Equal<T>(T expected, T actual, string what)
        {
            if (!EqualityComparer<T>.Default.Equals(expected, actual))
                throw new Exception(what + ": expected <" + expected + ">, got <" + actual + ">");
        }

        public static void SequenceEqual(int[] expected, int[] actual, string what)
        {
            Equal(expected.Length, actual.Length, what + " (length)");
            for (int i = 0; i < expected.Length; i++)
                Equal(expected[i], actual[i], what + " [" + i + "]");
        }

        public static T Throws<T>(Action action, string what) where T : Exception
        {
            try
            {
                action();
            }
            catch (T e)
            {
                return e;
            }
            catch (Exception e)
            {
                throw new Exception(what + ": expected " + typeof(T).Name + ", got " + e);
            }
            throw new Exception(what + ": expected " + typeof(T).Name + ", nothing was thrown");
        }

        public static ParleyException ThrowsStatus(ParleyStatus status, Action action, string what)
        {
            ParleyException e = Throws<ParleyException>(action, what);
            Equal(status, e.Status, what + " (status)");
            True(e.Message.Length > 0, what + ": the exception carries the library's message");
            return e;
        }
    }

    internal sealed class TestRunner
    {
        private readonly List<KeyValuePair<string, Action>> _tests = new List<KeyValuePair<string, Action>>();

        public void Add(string name, Action test)
        {
            _tests.Add(new KeyValuePair<string, Action>(name, test));
        }

        // Returns the process exit code: 0 when nothing failed.
        public int RunAll()
        {
            int passed = 0, failed = 0, skipped = 0;
            foreach (KeyValuePair<string, Action> t in _tests)
            {
                var clock = Stopwatch.StartNew();
                try
                {
                    t.Value();
                    passed++;
                    Console.WriteLine("ok       {0} ({1} ms)", t.Key, clock.ElapsedMilliseconds);
                }
                catch (SkipException e)
                {
                    skipped++;
                    Console.WriteLine("SKIPPED  {0}: {1}", t.Key, e.Message);
                }
                catch (Exception e)
                {
                    failed++;
                    Console.WriteLine("FAIL     {0}: {1}", t.Key, e);
                }
            }
            Console.WriteLine("{0} passed, {1} failed, {2} skipped", passed, failed, skipped);
            return failed == 0 ? 0 : 1;
        }
    }
}
