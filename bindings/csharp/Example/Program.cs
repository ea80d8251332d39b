// The shortest complete use of the bindings: open a model, stream one reply to the console.
//   mono ParleyExample.exe <model.gguf> [prompt] [max tokens]
using System;
using Parley;

internal static class Program
{
    private static int Main(string[] args)
    {
        if (args.Length < 1)
        {
            Console.Error.WriteLine("usage: ParleyExample.exe <model.gguf> [prompt] [max tokens]");
            return 2;
        }
        string prompt = args.Length > 1 ? args[1] : "Once upon a time";
        var options = new GenerateOptions { MaxTokens = args.Length > 2 ? int.Parse(args[2]) : 64 };
        try
        {
            using (var engine = new Engine(args[0]))
            using (Session chat = engine.CreateSession())
            {
                Console.Write(prompt);
                chat.Stream(prompt, options, Console.Write);
                Console.WriteLine();
                TurnStats stats = chat.LastStats;
                Console.Error.WriteLine("{0} tokens, first after {1:F1} ms, then {2:F2} ms each",
                                        stats.GeneratedTokens, stats.TtftMs, stats.TpotMs);
            }
            return 0;
        }
        catch (ParleyException e)
        {
            Console.Error.WriteLine("{0}: {1}", ParleyException.StatusName(e.Status), e.Message);
            return 1;
        }
    }
}
