// Runs the binding tests:  mono Parley.Tests.exe --shared <dir> --layout <file> --symbols <file>
//   --shared   the reference folder with models/ and golden/ (the model tests skip without it)
//   --layout   output of layout_probe.c, the C compiler's view of the structs
//   --symbols  the parley_* functions the library exports, one a line
// or, started by a test as a child process:  mono Parley.Tests.exe --child NAME ARGS...
using System;
using System.Linq;

namespace Parley.Tests
{
    internal static class Program
    {
        private static int Main(string[] args)
        {
            if (args.Length >= 2 && args[0] == "--child")
                return ChildPrograms.Run(args[1], args.Skip(2).ToArray());
            for (int i = 0; i + 1 < args.Length; i += 2)
            {
                if (args[i] == "--shared") Fixture.SharedDir = args[i + 1];
                else if (args[i] == "--layout") Fixture.LayoutFile = args[i + 1];
                else if (args[i] == "--symbols") Fixture.SymbolsFile = args[i + 1];
                else
                {
                    Console.Error.WriteLine("unknown option " + args[i]);
                    return 2;
                }
            }
            if (Fixture.LayoutFile == null || Fixture.SymbolsFile == null)
            {
                Console.Error.WriteLine("usage: Parley.Tests.exe --shared <dir> --layout <file> --symbols <file>");
                return 2;
            }
            Console.WriteLine("Parley {0}, reference folder {1}", Library.Version, Fixture.SharedDir);
            var runner = new TestRunner();
            LibraryTests.Register(runner);  // first: the log handler is set before any engine opens
            LayoutTests.Register(runner);
            GenerationTests.Register(runner);
            StopTests.Register(runner);
            ReplyPrefixTests.Register(runner);
            ExchangeTests.Register(runner);
            SystemPromptTests.Register(runner);
            ContinueTests.Register(runner);
            CountTokensTests.Register(runner);
            PrepareTests.Register(runner);
            ScoreRepliesTests.Register(runner);
            LogitBiasTests.Register(runner);
            FormatTests.Register(runner);
            JsonSchemaTests.Register(runner);
            EndIdsTests.Register(runner);
            ErrorTests.Register(runner);
            LoadProgressTests.Register(runner);
            KeptTurnTests.Register(runner);
            StoreTests.Register(runner);
            StoredSessionInfoTests.Register(runner);
            OverflowTests.Register(runner);
            ExportImportTests.Register(runner);
            LifetimeTests.Register(runner);
            EnumeratedStreamTests.Register(runner);
            return runner.RunAll();
        }
    }
}
