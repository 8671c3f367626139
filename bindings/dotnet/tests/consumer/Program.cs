// A consumer of the SpotTimer NuGet package (make test-dotnet, target dotnet-nupkg-consumer):
// compiled against lib/net472/SpotTimer.dll of the package that `nuget install` extracted,
// run with the package's runtimes/linux-x64/native/libspot_timer.so. It checks that both the
// managed assembly and the native library it loaded come from the extracted package (not from
// build/dotnet or target/release), that the assembly's version is the package's, and that a
// timer runs: a periodic timer with a synchronous handler, then a TickStream loop.
//
//   mono Consumer.exe <extracted package directory> <version>
using System;
using System.IO;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer;
using Timer = SpotTimer.Timer;

static class Consumer
{
    static int Fail(string what)
    {
        Console.Error.WriteLine("nupkg consumer: FAILED: " + what);
        return 1;
    }

    static string LoadedNativeLibrary()
    {
        foreach (var line in File.ReadAllLines("/proc/self/maps"))
        {
            int i = line.IndexOf('/');
            if (i >= 0 && line.EndsWith("libspot_timer.so")) return line.Substring(i);
        }
        return null;
    }

    static int Main(string[] args)
    {
        if (args.Length != 2) return Fail("usage: Consumer.exe <package directory> <version>");
        string pkg = Path.GetFullPath(args[0]).TrimEnd('/') + "/";
        string version = args[1];

        using (var rt = new Runtime())
        {
            int ticks = 0;
            var three = new ManualResetEventSlim();
            Owner owner = rt.AcquireOwner(7, lease: TimeSpan.FromSeconds(30));
            Timer t = owner.Every(1, TimeSpan.FromMilliseconds(10), tick =>
            {
                if (Interlocked.Increment(ref ticks) == 3) three.Set();
            });
            if (!three.Wait(TimeSpan.FromSeconds(10))) return Fail("3 ticks did not arrive within 10 s");
            CancelResult r = t.Cancel();
            if (r.Reason != EndReason.Cancelled) return Fail("cancel gave " + r);

            int streamed = 0;
            using (TickStream s = owner.Every(2, TimeSpan.FromMilliseconds(10)))
            {
                var loop = Task.Run(async () =>
                {
                    while (await s.WaitForNextTickAsync())
                        if (++streamed == 3) s.Dispose();
                });
                if (!loop.Wait(TimeSpan.FromSeconds(10))) return Fail("the TickStream loop did not end within 10 s");
            }
            if (streamed != 3) return Fail("the TickStream loop saw " + streamed + " ticks");

            string asm = Path.GetFullPath(typeof(Runtime).Assembly.Location);
            string native = LoadedNativeLibrary();
            string asmVersion = typeof(Runtime).Assembly.GetName().Version.ToString(3);
            Console.WriteLine("nupkg consumer: {0} ticks, then {1} from a TickStream", Volatile.Read(ref ticks), streamed);
            Console.WriteLine("nupkg consumer: SpotTimer {0} from {1}", asmVersion, asm);
            Console.WriteLine("nupkg consumer: native library {0}", native ?? "(not mapped)");
            if (!asm.StartsWith(pkg + "lib/net472/")) return Fail("SpotTimer.dll is not the package's lib/net472 one");
            if (native == null || !native.StartsWith(pkg + "runtimes/linux-x64/native/"))
                return Fail("libspot_timer.so is not the package's runtimes/linux-x64/native one");
            if (asmVersion != version) return Fail("assembly version " + asmVersion + ", package " + version);
        }
        Console.WriteLine("nupkg consumer: OK");
        return 0;
    }
}
