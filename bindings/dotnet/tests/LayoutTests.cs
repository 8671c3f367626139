// The P/Invoke declarations must not drift from the header. The test compiles a C program
// against include/spot_timer.h that prints sizeof/offsetof of every mirrored struct (field
// names are the C names) and the value of every #define the binding mirrors, and compares
// them with Marshal.SizeOf/OffsetOf and the C# constants. It also checks every [DllImport]
// entry point against the library's dynamic symbols, and that every exported spot_*
// function is declared.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.RegularExpressions;
using NUnit.Framework;
using SpotTimer.Interop;

namespace SpotTimer.Tests
{
    [TestFixture]
    public class LayoutTests
    {
        static string RepoRoot()
        {
            string env = Environment.GetEnvironmentVariable("SPOT_REPO_ROOT");
            if (!string.IsNullOrEmpty(env)) return env;
            var dir = new DirectoryInfo(Path.GetDirectoryName(typeof(LayoutTests).Assembly.Location));
            while (dir != null && !File.Exists(Path.Combine(dir.FullName, "include", "spot_timer.h"))) dir = dir.Parent;
            if (dir == null) Assert.Fail("cannot find include/spot_timer.h (set SPOT_REPO_ROOT)");
            return dir.FullName;
        }

        static string Header { get { return Path.Combine(RepoRoot(), "include", "spot_timer.h"); } }

        static string Library
        {
            get
            {
                string env = Environment.GetEnvironmentVariable("SPOT_LIB");
                return !string.IsNullOrEmpty(env) ? env : Path.Combine(RepoRoot(), "target", "release", "libspot_timer.so");
            }
        }

        static string Run(string file, string args)
        {
            var psi = new ProcessStartInfo(file, args)
            {
                UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true,
            };
            using (var p = Process.Start(psi))
            {
                string output = p.StandardOutput.ReadToEnd();
                string err = p.StandardError.ReadToEnd();
                p.WaitForExit();
                if (p.ExitCode != 0) Assert.Fail(file + " " + args + " failed: " + err);
                return output;
            }
        }

        static IEnumerable<Type> MirroredStructs()
        {
            return typeof(Native).Assembly.GetTypes().Where(t => t.GetCustomAttributes(typeof(NativeStructAttribute), false).Length > 0);
        }

        static string CName(Type t) { return ((NativeStructAttribute)t.GetCustomAttributes(typeof(NativeStructAttribute), false)[0]).CName; }

        static string Snake(string pascal)
        {
            return Regex.Replace(pascal, "(?<=[a-z0-9])([A-Z])", "_$1").ToUpperInvariant();
        }

        /// <summary>C# constant -> header #define name.</summary>
        static Dictionary<string, long> ManagedConstants()
        {
            var d = new Dictionary<string, long>();
            foreach (SpotStatus s in Enum.GetValues(typeof(SpotStatus)))
                d[s == SpotStatus.Ok ? "SPOT_OK" : "SPOT_E_" + Snake(s.ToString())] = (int)s;
            foreach (OverrunPolicy p in Enum.GetValues(typeof(OverrunPolicy))) d["SPOT_POLICY_" + Snake(p.ToString())] = (uint)p;
            foreach (GateMode g in Enum.GetValues(typeof(GateMode))) d["SPOT_GATE_" + Snake(g.ToString())] = (uint)g;
            foreach (EndReason r in Enum.GetValues(typeof(EndReason))) d["SPOT_END_" + Snake(r.ToString())] = (uint)r;
            foreach (var f in typeof(C).GetFields(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic))
            {
                if (!f.IsLiteral) continue;
                object v = f.GetRawConstantValue();
                d["SPOT_" + f.Name] = v is ulong ? unchecked((long)(ulong)v) : Convert.ToInt64(v);
            }
            d["SPOT_CLOCK_" + Snake(ClockKind.Manual.ToString())] = (int)ClockKind.Manual;
            d["SPOT_CLOCK_" + Snake(ClockKind.Real.ToString())] = (int)ClockKind.Real;
            d["SPOT_DELIVERY_" + Snake(DeliveryMode.Exchange.ToString())] = (int)DeliveryMode.Exchange;
            d["SPOT_DELIVERY_" + Snake(DeliveryMode.Callback.ToString())] = (int)DeliveryMode.Callback;
            // The Spot lifecycle's public enums carry the header's numbers.
            foreach (SpotKind k in Enum.GetValues(typeof(SpotKind))) d["SPOT_KIND_" + Snake(k.ToString())] = (uint)k;
            foreach (Lane l in Enum.GetValues(typeof(Lane))) d["SPOT_LANE_" + Snake(l.ToString())] = (uint)l;
            foreach (CloseReason r in Enum.GetValues(typeof(CloseReason))) d["SPOT_CLOSE_" + Snake(r.ToString())] = (uint)r;
            foreach (WorkKind w in Enum.GetValues(typeof(WorkKind))) d["SPOT_WORK_" + Snake(w.ToString())] = (uint)w;
            foreach (RelocationTargetKind t in Enum.GetValues(typeof(RelocationTargetKind)))
                d["SPOT_TARGET_" + Snake(t.ToString())] = (uint)t;
            return d;
        }

        Dictionary<string, long> _native;

        Dictionary<string, long> NativeAnswers()
        {
            if (_native != null) return _native;
            var c = new StringBuilder();
            c.AppendLine("#include <stdio.h>\n#include <stddef.h>\n#include \"spot_timer.h\"\nint main(void) {");
            foreach (var t in MirroredStructs())
            {
                string cn = CName(t);
                c.AppendFormat("  printf(\"sizeof {0} %zu\\n\", sizeof(struct {0}));\n", cn);
                foreach (var f in t.GetFields(BindingFlags.Instance | BindingFlags.Public))
                    c.AppendFormat("  printf(\"offsetof {0}.{1} %zu\\n\", offsetof(struct {0}, {1}));\n", cn, f.Name);
            }
            foreach (var k in ManagedConstants().Keys)
                c.AppendFormat("  printf(\"define {0} %lld\\n\", (long long)({0}));\n", k);
            c.AppendLine("  return 0;\n}");
            string dir = Path.Combine(Path.GetTempPath(), "spot_layout_" + Process.GetCurrentProcess().Id);
            Directory.CreateDirectory(dir);
            string src = Path.Combine(dir, "layout.c"), exe = Path.Combine(dir, "layout");
            File.WriteAllText(src, c.ToString());
            Run("cc", string.Format("-std=c11 -Wall -I \"{0}\" -o \"{1}\" \"{2}\"", Path.GetDirectoryName(Header), exe, src));
            _native = new Dictionary<string, long>();
            foreach (var line in Run(exe, "").Split('\n'))
            {
                var parts = line.Trim().Split(' ');
                if (parts.Length == 3) _native[parts[0] + " " + parts[1]] = long.Parse(parts[2]);
            }
            return _native;
        }

        [Test]
        public void StructSizesAndFieldOffsets_MatchTheHeader()
        {
            var native = NativeAnswers();
            var problems = new List<string>();
            int checkedFields = 0;
            foreach (var t in MirroredStructs())
            {
                string cn = CName(t);
                long size = Marshal.SizeOf(t);
                if (native["sizeof " + cn] != size) problems.Add(string.Format("sizeof {0}: C {1}, C# {2}", cn, native["sizeof " + cn], size));
                foreach (var f in t.GetFields(BindingFlags.Instance | BindingFlags.Public))
                {
                    long off = Marshal.OffsetOf(t, f.Name).ToInt64();
                    long cOff = native["offsetof " + cn + "." + f.Name];
                    if (cOff != off) problems.Add(string.Format("offsetof {0}.{1}: C {2}, C# {3}", cn, f.Name, cOff, off));
                    checkedFields++;
                }
            }
            Console.WriteLine("layout: {0} structs, {1} fields compared", MirroredStructs().Count(), checkedFields);
            Assert.IsEmpty(problems, string.Join("; ", problems));
        }

        [Test]
        public void SpotBatch_Is40Bytes_WithTheHeaderOffsets_AndItsCellConstants()
        {
            // The dispatcher reads records, outcome cells and the position cell through it.
            var native = NativeAnswers();
            Assert.AreEqual(40, Marshal.SizeOf(typeof(spot_batch)));
            Assert.AreEqual(40, native["sizeof spot_batch"]);
            var offsets = new[]
            {
                Tuple.Create("struct_size", 0), Tuple.Create("reserved", 4), Tuple.Create("records", 8),
                Tuple.Create("outcomes", 16), Tuple.Create("position", 24), Tuple.Create("count", 32),
            };
            foreach (var f in offsets)
            {
                Assert.AreEqual(f.Item2, Marshal.OffsetOf(typeof(spot_batch), f.Item1).ToInt64(), f.Item1);
                Assert.AreEqual(f.Item2, native["offsetof spot_batch." + f.Item1], f.Item1);
            }
            Assert.AreEqual((long)uint.MaxValue, native["define SPOT_BATCH_PENDING"]);
            Assert.AreEqual((long)uint.MaxValue - 1, native["define SPOT_BATCH_KEPT"]);
            Assert.AreEqual(uint.MaxValue, C.BATCH_PENDING);
            Assert.AreEqual(uint.MaxValue - 1, C.BATCH_KEPT);
        }

        [Test]
        public void EveryHeaderStructIsMirrored_WithTheSameFieldNames()
        {
            string text = File.ReadAllText(Header);
            var mirrored = MirroredStructs().ToDictionary(CName);
            var problems = new List<string>();
            foreach (Match m in Regex.Matches(text, @"struct (\w+) \{(.*?)\}\s*\w*\s*;", RegexOptions.Singleline))
            {
                string name = m.Groups[1].Value;
                Type t;
                if (!mirrored.TryGetValue(name, out t)) { problems.Add("not mirrored: " + name); continue; }
                var body = Regex.Replace(m.Groups[2].Value, @"//[^\n]*|/\*.*?\*/", "", RegexOptions.Singleline);
                var cFields = Regex.Matches(body, @"(\w+)\s*;").Cast<Match>().Select(x => x.Groups[1].Value).ToList();
                var csFields = t.GetFields(BindingFlags.Instance | BindingFlags.Public).Select(f => f.Name).ToList();
                if (!cFields.SequenceEqual(csFields))
                    problems.Add(name + ": C [" + string.Join(",", cFields) + "] vs C# [" + string.Join(",", csFields) + "]");
            }
            Assert.IsEmpty(problems, string.Join("; ", problems));
        }

        [Test]
        public void ConstantsAndEnumValues_MatchTheHeader()
        {
            var native = NativeAnswers();
            var problems = new List<string>();
            foreach (var kv in ManagedConstants())
                if (native["define " + kv.Key] != kv.Value)
                    problems.Add(string.Format("{0}: C {1}, C# {2}", kv.Key, native["define " + kv.Key], kv.Value));
            Assert.IsEmpty(problems, string.Join("; ", problems));
        }

        [Test]
        public void EveryHeaderDefine_IsMirrored()
        {
            // Every valued #define of the header (statuses, enum values, constants) has its C#
            // counterpart, so a value added to the header cannot be forgotten here.
            var managed = ManagedConstants();
            var missing = Regex.Matches(File.ReadAllText(Header), @"^#define (SPOT_\w+)[ \t]+\S", RegexOptions.Multiline)
                .Cast<Match>().Select(m => m.Groups[1].Value).Where(n => !managed.ContainsKey(n)).ToList();
            Assert.IsEmpty(missing, "header #defines without a C# counterpart: " + string.Join(", ", missing));
        }

        [Test]
        public void EveryDllImport_ExistsInTheLibrary_AndEveryExportIsDeclared()
        {
            var exports = new HashSet<string>(Run("nm", "-D --defined-only \"" + Library + "\"")
                .Split('\n').Select(l => l.Trim().Split(' ')).Where(p => p.Length == 3 && p[1] == "T").Select(p => p[2]));
            var imports = typeof(Native).GetMethods(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic)
                .Where(m => m.GetCustomAttributes(typeof(DllImportAttribute), false).Length > 0)
                .Select(m => m.Name).ToList();
            var missing = imports.Where(i => !exports.Contains(i)).ToList();
            Assert.IsEmpty(missing, "declared but not exported: " + string.Join(", ", missing));
            var undeclared = exports.Where(e => e.StartsWith("spot_") && !imports.Contains(e)).ToList();
            Assert.IsEmpty(undeclared, "exported but not declared in Interop.g.cs (run make header): " + string.Join(", ", undeclared));
            // the header declares the same set
            string header = File.ReadAllText(Header);
            foreach (var i in imports) StringAssert.IsMatch(@"\b" + i + @"\s*\(", header, i + " is not in the header");
            // and each one actually binds (resolves at run time)
            foreach (var m in typeof(Native).GetMethods(BindingFlags.Static | BindingFlags.Public)
                .Where(x => x.GetCustomAttributes(typeof(DllImportAttribute), false).Length > 0))
                Marshal.Prelink(m);
            Console.WriteLine("entry points: {0} declared, all exported", imports.Count);
        }

        [Test]
        public void ParameterTypes_MatchTheHeaderPrototypes()
        {
            // A light check of the prototypes: parameter count and the width of each parameter.
            string header = Regex.Replace(File.ReadAllText(Header), @"//[^\n]*", "");
            var problems = new List<string>();
            foreach (var m in typeof(Native).GetMethods(BindingFlags.Static | BindingFlags.Public)
                .Where(x => x.GetCustomAttributes(typeof(DllImportAttribute), false).Length > 0))
            {
                var proto = Regex.Match(header, @"\b" + m.Name + @"\s*\(([^)]*)\)\s*;", RegexOptions.Singleline);
                if (!proto.Success) { problems.Add("no prototype: " + m.Name); continue; }
                string args = proto.Groups[1].Value.Trim();
                var cParams = args == "void" || args == "" ? new string[0] : args.Split(',').Select(a => a.Trim()).ToArray();
                var csParams = m.GetParameters();
                if (cParams.Length != csParams.Length) { problems.Add(m.Name + ": parameter count"); continue; }
                for (int i = 0; i < cParams.Length; i++)
                {
                    string c = Regex.Replace(cParams[i], @"^(const\s+)?(struct\s+)?", "");
                    Type p = csParams[i].ParameterType;
                    string expect = c.Contains("*") ? "ptr" : c.StartsWith("uint64_t") ? "u64" : c.StartsWith("int64_t") ? "i64"
                        : c.StartsWith("double ") ? "f64"
                        : c.StartsWith("uint32_t") ? "u32" : c.StartsWith("int32_t") || c.StartsWith("spot_status ") ? "i32" : c.StartsWith("size_t") ? "usize"
                        : c.StartsWith("spot_timer ") ? "spot_timer" : Regex.IsMatch(c, @"^spot_\w+_fn\b") ? "ptr" : "?" + c;
                    string got = p.IsPointer || p == typeof(IntPtr) ? "ptr" : p == typeof(ulong) ? "u64" : p == typeof(long) ? "i64"
                        : p == typeof(double) ? "f64"
                        : p == typeof(uint) ? "u32" : p == typeof(int) ? "i32" : p == typeof(UIntPtr) ? "usize"
                        : p == typeof(spot_timer) ? "spot_timer" : p.Name;
                    if (expect != got) problems.Add(string.Format("{0} param {1} ({2}): C# {3}", m.Name, i, c, p.Name));
                }
            }
            Assert.IsEmpty(problems, string.Join("; ", problems));
        }
    }
}
