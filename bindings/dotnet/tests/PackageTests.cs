// The NuGet package (bindings/dotnet/SpotTimer.nuspec, packed by `make dotnet-pack` before the
// suite runs): its layout, its metadata, and that it carries the very assembly under test. The
// package is a zip file; System.IO.Compression.dll (ZipArchive) is not part of the Mono packages
// the suite installs, so the few lines below read the central directory and inflate with
// System.dll's DeflateStream. A program consuming the extracted package runs in mk/dotnet.mk
// (target dotnet-nupkg-consumer, bindings/dotnet/tests/consumer/Program.cs).
using System;
using System.Collections.Generic;
using System.IO;
using System.IO.Compression;
using System.Linq;
using System.Reflection;
using System.Text;
using System.Text.RegularExpressions;
using System.Xml;
using NUnit.Framework;

namespace SpotTimer.Tests
{
    /// <summary>Reads the entries of a zip file (stored or deflated).</summary>
    static class Zip
    {
        public static Dictionary<string, byte[]> Read(string path)
        {
            byte[] z = File.ReadAllBytes(path);
            int eocd = -1;
            for (int i = z.Length - 22; i >= Math.Max(0, z.Length - 22 - 65535); i--)
                if (U32(z, i) == 0x06054b50) { eocd = i; break; }
            if (eocd < 0) throw new InvalidDataException(path + ": no end of central directory");
            int count = U16(z, eocd + 10);
            int p = (int)U32(z, eocd + 16);
            var entries = new Dictionary<string, byte[]>();
            for (int n = 0; n < count; n++)
            {
                if (U32(z, p) != 0x02014b50) throw new InvalidDataException(path + ": bad central directory entry");
                int method = U16(z, p + 10);
                int csize = (int)U32(z, p + 20), usize = (int)U32(z, p + 24);
                int nameLen = U16(z, p + 28), extraLen = U16(z, p + 30), commentLen = U16(z, p + 32);
                int local = (int)U32(z, p + 42);
                string name = Encoding.UTF8.GetString(z, p + 46, nameLen);
                p += 46 + nameLen + extraLen + commentLen;
                if (U32(z, local) != 0x04034b50) throw new InvalidDataException(path + ": bad local header of " + name);
                int data = local + 30 + U16(z, local + 26) + U16(z, local + 28);
                byte[] content;
                if (method == 0) { content = new byte[csize]; Array.Copy(z, data, content, 0, csize); }
                else if (method == 8)
                {
                    content = new byte[usize];
                    using (var d = new DeflateStream(new MemoryStream(z, data, csize), CompressionMode.Decompress))
                    {
                        int got = 0, r;
                        while (got < usize && (r = d.Read(content, got, usize - got)) > 0) got += r;
                        if (got != usize) throw new InvalidDataException(path + ": short entry " + name);
                    }
                }
                else throw new InvalidDataException(path + ": compression method " + method + " of " + name);
                entries[name] = content;
            }
            return entries;
        }

        static int U16(byte[] b, int i) { return b[i] | b[i + 1] << 8; }
        static uint U32(byte[] b, int i) { return (uint)(b[i] | b[i + 1] << 8 | b[i + 2] << 16 | b[i + 3] << 24); }
    }

    [TestFixture]
    public class PackageTests
    {
        static string RepoRoot()
        {
            string env = Environment.GetEnvironmentVariable("SPOT_REPO_ROOT");
            if (!string.IsNullOrEmpty(env)) return env;
            var dir = new DirectoryInfo(Path.GetDirectoryName(typeof(PackageTests).Assembly.Location));
            while (dir != null && !File.Exists(Path.Combine(dir.FullName, "Cargo.toml"))) dir = dir.Parent;
            if (dir == null) Assert.Fail("cannot find the repository root (set SPOT_REPO_ROOT)");
            return dir.FullName;
        }

        static string CrateVersion()
        {
            foreach (var line in File.ReadAllLines(Path.Combine(RepoRoot(), "Cargo.toml")))
            {
                var m = Regex.Match(line, "^version = \"([^\"]+)\"");
                if (m.Success) return m.Groups[1].Value;
            }
            Assert.Fail("no version in Cargo.toml");
            return null;
        }

        /// <summary>SPOT_NUPKG (set by mk/dotnet.mk), else build/dotnet/nupkg/SpotTimer.&lt;crate version&gt;.nupkg.</summary>
        static string PackagePath()
        {
            string env = Environment.GetEnvironmentVariable("SPOT_NUPKG");
            string p = !string.IsNullOrEmpty(env) ? env
                : Path.Combine(RepoRoot(), "build", "dotnet", "nupkg", "SpotTimer." + CrateVersion() + ".nupkg");
            if (!File.Exists(p)) Assert.Fail(p + " does not exist: run `make dotnet-pack` first");
            return p;
        }

        static Dictionary<string, byte[]> s_entries;
        static Dictionary<string, byte[]> Entries { get { return s_entries ?? (s_entries = Zip.Read(PackagePath())); } }

        static XmlDocument Nuspec(out XmlNamespaceManager ns)
        {
            var doc = new XmlDocument();
            doc.LoadXml(Encoding.UTF8.GetString(Entries["SpotTimer.nuspec"]).TrimStart('\uFEFF'));
            ns = new XmlNamespaceManager(doc.NameTable);
            ns.AddNamespace("n", doc.DocumentElement.NamespaceURI);
            return doc;
        }

        [Test]
        public void NuGetPackage_Layout_ManagedAssemblyUnderLibNet472_NativeLibraryUnderRuntimesLinuxX64Native()
        {
            var files = Entries.Keys.Where(k => !k.StartsWith("_rels/") && !k.StartsWith("package/")
                                                && k != "[Content_Types].xml").OrderBy(k => k, StringComparer.Ordinal).ToArray();
            CollectionAssert.AreEqual(new[]
            {
                "README.md",
                "SpotTimer.nuspec",
                "lib/net472/SpotTimer.dll",
                "lib/net472/SpotTimer.dll.config",
                "lib/net472/SpotTimer.xml",
                "runtimes/linux-x64/native/libspot_timer.so",
            }, files);
        }

        [Test]
        public void NuGetPackage_CarriesTheAssemblyUnderTest_AndAnX64SharedLibrary()
        {
            byte[] tested = File.ReadAllBytes(typeof(Runtime).Assembly.Location);
            CollectionAssert.AreEqual(tested, Entries["lib/net472/SpotTimer.dll"], "the packed SpotTimer.dll is the one under test");
            byte[] so = Entries["runtimes/linux-x64/native/libspot_timer.so"];
            Assert.AreEqual(new byte[] { 0x7f, (byte)'E', (byte)'L', (byte)'F', 2 }, so.Take(5).ToArray(), "ELF, 64-bit");
            Assert.AreEqual(3, so[16] | so[17] << 8, "e_type ET_DYN");
            Assert.AreEqual(0x3e, so[18] | so[19] << 8, "e_machine x86-64");
            string xml = Encoding.UTF8.GetString(Entries["lib/net472/SpotTimer.xml"]);
            StringAssert.Contains("<member name=\"T:SpotTimer.Runtime\">", xml);
            StringAssert.Contains("dll=\"spot_timer\"", Encoding.UTF8.GetString(Entries["lib/net472/SpotTimer.dll.config"]));
        }

        // ------------------------------------------------------------------ XML documentation ids

        static string TypeId(Type t)
        {
            if (t.IsByRef) return TypeId(t.GetElementType()) + "@";
            if (t.IsPointer) return TypeId(t.GetElementType()) + "*";
            if (t.IsArray) return TypeId(t.GetElementType()) + "[]";
            if (t.IsGenericParameter) return "`" + t.GenericParameterPosition;
            string name = t.IsNested ? TypeId(t.DeclaringType) + "." + t.Name : t.Namespace + "." + t.Name;
            if (!t.IsGenericType) return name;
            name = name.Substring(0, name.IndexOf('`'));
            return name + "{" + string.Join(",", t.GetGenericArguments().Select(TypeId)) + "}";
        }

        static string DefinitionId(Type t) { return t.IsNested ? DefinitionId(t.DeclaringType) + "." + t.Name : t.FullName; }

        static string MethodId(MethodBase m)
        {
            string name = m.IsConstructor ? "#ctor" : m.Name;
            var ps = m.GetParameters();
            string id = "M:" + DefinitionId(m.DeclaringType) + "." + name
                + (ps.Length == 0 ? "" : "(" + string.Join(",", ps.Select(p => TypeId(p.ParameterType))) + ")");
            var mi = m as MethodInfo;
            if (mi != null && (m.Name == "op_Implicit" || m.Name == "op_Explicit")) id += "~" + TypeId(mi.ReturnType);
            return id;
        }

        /// <summary>The documentation ids of every public type of SpotTimer.dll and of every member a
        /// user sees (public and protected, declared on the type, not compiler-generated).</summary>
        static List<string> PublicIds()
        {
            const BindingFlags all = BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Instance
                                     | BindingFlags.Static | BindingFlags.DeclaredOnly;
            var ids = new List<string>();
            foreach (var t in typeof(Runtime).Assembly.GetTypes().Where(t => t.IsVisible))
            {
                ids.Add("T:" + DefinitionId(t));
                Func<MethodBase, bool> visible = m => m != null && (m.IsPublic || m.IsFamily || m.IsFamilyOrAssembly);
                foreach (var f in t.GetFields(all))
                    if ((f.IsPublic || f.IsFamily) && !f.IsSpecialName) ids.Add("F:" + DefinitionId(t) + "." + f.Name);
                foreach (var p in t.GetProperties(all))
                    if (visible(p.GetGetMethod(true)) || visible(p.GetSetMethod(true))) ids.Add("P:" + DefinitionId(t) + "." + p.Name);
                foreach (var e in t.GetEvents(all))
                    if (visible(e.GetAddMethod(true))) ids.Add("E:" + DefinitionId(t) + "." + e.Name);
                foreach (var c in t.GetConstructors(all))
                    if (visible(c) && !(t.IsValueType && c.GetParameters().Length == 0)) ids.Add(MethodId(c));
                foreach (var m in t.GetMethods(all))
                    if (visible(m) && (!m.IsSpecialName || m.Name.StartsWith("op_"))
                        && !(typeof(Delegate).IsAssignableFrom(t)))
                        ids.Add(MethodId(m));
            }
            return ids;
        }

        [Test]
        public void NuGetPackage_XmlDocumentation_CoversEveryPublicTypeAndMember()
        {
            var doc = new XmlDocument();
            doc.LoadXml(Encoding.UTF8.GetString(Entries["lib/net472/SpotTimer.xml"]));
            var documented = new HashSet<string>();
            foreach (XmlElement m in doc.SelectNodes("/doc/members/member"))
            {
                var summary = m.SelectSingleNode("summary");
                if (summary != null && summary.InnerText.Trim().Length > 0) documented.Add(m.GetAttribute("name"));
            }
            var ids = PublicIds();
            Assert.Greater(ids.Count, 500, "public types and members found");
            CollectionAssert.IsEmpty(ids.Where(id => !documented.Contains(id)).ToList(),
                "public types and members without a <summary> in SpotTimer.xml");
            foreach (var id in new[] { "T:SpotTimer.TickStream", "M:SpotTimer.Timer.Cancel",
                                       "M:SpotTimer.Timer.CancelAsync(System.Threading.CancellationToken)",
                                       "M:SpotTimer.Runtime.DisposeAsync", "F:SpotTimer.Interop.spot_record.live_word" })
                CollectionAssert.Contains(ids, id);
        }

        [Test]
        public void NuGetPackage_Nuspec_IdVersionLicenseDescription()
        {
            XmlNamespaceManager ns;
            var doc = Nuspec(out ns);
            Func<string, string> meta = name =>
            {
                var n = doc.SelectSingleNode("/n:package/n:metadata/n:" + name, ns);
                return n == null ? null : n.InnerText;
            };
            Assert.AreEqual("SpotTimer", meta("id"));
            string version = CrateVersion();
            Assert.AreEqual(version, meta("version"), "package version = crate version");
            var info = (AssemblyInformationalVersionAttribute)Attribute.GetCustomAttribute(
                typeof(Runtime).Assembly, typeof(AssemblyInformationalVersionAttribute));
            Assert.IsNotNull(info, "SpotTimer.dll has an AssemblyInformationalVersion");
            Assert.AreEqual(version, info.InformationalVersion);
            Assert.AreEqual(new Version(version + ".0"), typeof(Runtime).Assembly.GetName().Version);
            // NuGet 2.8.7 has no <license> element: the expression's licenses.nuget.org URL.
            Assert.AreEqual("https://licenses.nuget.org/MIT%20OR%20Apache-2.0", meta("licenseUrl"));
            Assert.Greater((meta("description") ?? "").Length, 100);
            StringAssert.StartsWith("# SpotTimer", Encoding.UTF8.GetString(Entries["README.md"]));
        }
    }
}
