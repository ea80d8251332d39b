// Runs a test program in a child Mono process, for what only a process exit shows: this test
// executable started again with --child NAME ARGS... (see ChildPrograms).
using System;
using System.Diagnostics;
using System.Reflection;
using System.Text;

namespace Parley.Tests
{
    internal static class ChildProcess
    {
        internal sealed class Result
        {
            public bool TimedOut;
            public int ExitCode;
            public string Output;   // stdout and stderr, as they came
        }

        // Runs child program `name` and waits for it to exit by itself, at most `limitMs`; one
        // still running then is killed (TimedOut). The library path is inherited. `debug`:
        // mono --debug (line numbers in stack traces), which also changes how it shuts down.
        public static Result Run(string name, string[] args, int limitMs, bool debug = true)
        {
            var start = new ProcessStartInfo("mono")
            {
                Arguments = (debug ? "--debug " : "") + Quote(Assembly.GetEntryAssembly().Location)
                    + " --child "
                    + name + " " + string.Join(" ", Array.ConvertAll(args, Quote)),
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            };
            var output = new StringBuilder();
            DataReceivedEventHandler collect = (sender, e) =>
            {
                if (e.Data == null) return;
                lock (output) output.Append(e.Data).Append('\n');
            };
            using (Process child = Process.Start(start))
            {
                child.OutputDataReceived += collect;
                child.ErrorDataReceived += collect;
                child.BeginOutputReadLine();
                child.BeginErrorReadLine();
                var result = new Result { TimedOut = !child.WaitForExit(limitMs) };
                if (result.TimedOut)
                {
                    child.Kill();
                    child.WaitForExit();
                }
                else
                {
                    child.WaitForExit();  // drains the output
                    result.ExitCode = child.ExitCode;
                }
                lock (output) result.Output = output.ToString();
                return result;
            }
        }

        private static string Quote(string arg)
        {
            return "\"" + arg.Replace("\\", "\\\\").Replace("\"", "\\\"") + "\"";
        }
    }

    // The programs a child process runs: Main hands `--child NAME ARGS...` to Run.
    internal static class ChildPrograms
    {
        public const string DisposePausedStream = "dispose-paused-stream";
        public const string ExitWithPausedStream = "exit-with-paused-stream";
        public const string LogWithEngineLeftOpen = "log-with-engine-left-open";
        public const string SeenPrefix = "seen: ";

        public static int Run(string name, string[] args)
        {
            if (name == DisposePausedStream)
                return EnumeratedStreamTests.DisposePausedStreamChild(args);
            if (name == ExitWithPausedStream)
                return EnumeratedStreamTests.ExitWithPausedStreamChild(args);
            if (name == LogWithEngineLeftOpen) return LibraryTests.LogWithEngineLeftOpenChild(args);
            Console.Error.WriteLine("unknown child program " + name);
            return 2;
        }
    }
}
