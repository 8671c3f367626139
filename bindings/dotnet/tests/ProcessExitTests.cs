using System;
using System.Diagnostics;
using System.IO;
using NUnit.Framework;
using SpotTimer;

namespace SpotTimer.Tests
{
    /// <summary>A program that ends without disposing its Runtime still exits: its dispatcher thread
    /// waits inside the native library, so the binding disposes every open runtime at process exit.</summary>
    [TestFixture]
    public class ProcessExitTests
    {
        const string Program = @"
using System;
using SpotTimer;
static class P
{
    static void Main(string[] args)
    {
        var rt = new Runtime();                       // real clock: a dispatcher thread
        var cb = new Runtime(new RuntimeOptions { Delivery = DeliveryMode.Callback });
        rt.AcquireOwner(1).After(1, TimeSpan.FromSeconds(60), t => { });
        cb.Every(TimeSpan.FromMilliseconds(5), t => { });
        System.Threading.Thread.Sleep(50);            // the dispatcher is waiting for records
        Console.WriteLine(""end of Main"");            // no Dispose
    }
}";

        [Test, Timeout(120000)]
        public void ProgramWithoutDispose_Exits()
        {
            string dir = Path.Combine(Path.GetTempPath(), "spot-exit-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
            try
            {
                string src = Path.Combine(dir, "P.cs"), exe = Path.Combine(dir, "P.exe");
                File.WriteAllText(src, Program);
                string dll = typeof(Runtime).Assembly.Location;
                Run("mcs", string.Format("-out:\"{0}\" -r:\"{1}\" \"{2}\"", exe, dll, src), 60000);
                File.Copy(dll, Path.Combine(dir, Path.GetFileName(dll)));
                string config = dll + ".config";
                if (File.Exists(config)) File.Copy(config, Path.Combine(dir, Path.GetFileName(config)));
                var sw = Stopwatch.StartNew();
                string output = Run("mono", "\"" + exe + "\"", 30000);
                StringAssert.Contains("end of Main", output);
                Assert.Less(sw.Elapsed.TotalSeconds, 20, "the process took too long to exit");
            }
            finally
            {
                try { Directory.Delete(dir, true); } catch (IOException) { }
            }
        }

        static string Run(string file, string args, int timeoutMs)
        {
            var psi = new ProcessStartInfo(file, args)
            {
                UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true,
            };
            using (var p = Process.Start(psi))
            {
                var stdout = p.StandardOutput.ReadToEndAsync();
                var stderr = p.StandardError.ReadToEndAsync();
                if (!p.WaitForExit(timeoutMs))
                {
                    try { p.Kill(); } catch (InvalidOperationException) { }
                    Assert.Fail(file + " did not exit within " + timeoutMs + " ms (output: " + stdout.Result + ")");
                }
                p.WaitForExit();
                if (p.ExitCode != 0) Assert.Fail(file + " " + args + " exited " + p.ExitCode + ": " + stderr.Result);
                return stdout.Result;
            }
        }
    }
}
