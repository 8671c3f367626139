#!/usr/bin/env python3
"""Writes the .NET mirror of the C ABI (src/Interop.g.cs) from include/spot_timer.h.

The header is itself generated from the Rust sources (cbindgen), so every status code,
constant, struct, callback type and entry point is written once, in Rust; the binding's
declarations follow it and cannot drift (`make header` runs this; `make dotnet-dll` fails
when the committed file differs from a fresh generation). tests/LayoutTests.cs still checks
the result against the native compiler's sizes and offsets and the library's exports.

Usage: gen_interop.py HEADER > src/Interop.g.cs
"""
import re
import sys

# C scalar types -> C# (blittable only: records are read straight from native buffers).
SCALARS = {
    "uint8_t": "byte", "char": "byte", "int32_t": "int", "int": "int", "uint32_t": "uint",
    "int64_t": "long", "uint64_t": "ulong", "size_t": "UIntPtr", "double": "double",
    "void": "void", "spot_status": "int",
}
# Counter structs a .NET user reads: the public type each fills (its members, one per field
# with the field's documentation, are generated; the type's own documentation is written by
# hand in its partial part), and whether it is a class or a readonly struct.
PUBLIC_VIEWS = {
    "spot_stats": ("RuntimeStats", "sealed partial class"),
    "spot_timer_stats": ("TimerStats", "readonly partial struct"),
    "spot_node_stats": ("NodeStats", "sealed partial class"),
}
# Members whose .NET name is not the field's name in PascalCase.
RENAMED = {"queue_len": "QueueLength"}
KEYWORDS = {"out", "in", "ref", "params", "string", "object", "fixed", "base", "lock", "event"}


def doc_lines(text, indent):
    """A header doc comment as C# XML documentation: a summary, later paragraphs as <para>."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"`([^`]*)`", r"<c>\1</c>", text)
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    out = []
    for i, para in enumerate(paragraphs):
        lines = para.split("\n")
        if i > 0:
            lines[0] = "<para>" + lines[0]
            lines[-1] += "</para>"
        out.extend(lines)
    out[0] = "<summary>" + out[0]
    out[-1] += "</summary>"
    return [indent + "/// " + line for line in out]


def cs_type(ctype, where):
    """The C# type of a C type. `where`: "field" (pointers are IntPtr: structs stay
    unmanaged-free), "param" or "return" (pointers to data are typed pointers)."""
    ctype = re.sub(r"\b(const|struct)\b", "", ctype).strip()
    stars = ctype.count("*")
    base = ctype.replace("*", "").strip()
    if base.endswith("_fn"):
        return "IntPtr"
    name = SCALARS.get(base, base)
    if stars == 0:
        return name
    if where in ("field", "return") or name == "void":
        return "IntPtr"
    return name + "*" * stars


def split_decl(decl):
    """'uint64_t *out_rt' -> ('uint64_t *', 'out_rt')."""
    m = re.match(r"^(.*?)(\w+)$", decl.strip())
    return m.group(1).strip(), m.group(2)


def params(text, where="param"):
    text = text.strip()
    if text in ("", "void"):
        return ""
    result = []
    for p in text.split(","):
        ctype, name = split_decl(p)
        if name in KEYWORDS:
            name = "@" + name
        result.append(cs_type(ctype, where) + " " + name)
    return ", ".join(result)


def constant(name, value):
    """A #define as a C# constant of the narrowest type that holds its value."""
    value = value.replace("UINT64_MAX", "ulong.MaxValue").replace("UINT32_MAX", "uint.MaxValue")
    kind = "ulong" if "ulong." in value else "uint"
    return "public const {} {} = {};".format(kind, name, value)


def pascal(snake):
    return "".join(part.capitalize() for part in snake.lower().split("_"))


def parse(header):
    """Yields (doc, kind, data) for every documented item of the header, in order."""
    body = header.split('extern "C" {', 1)[1]
    pos, doc = 0, None
    token = re.compile(
        r"/\*\*(?P<doc>.*?)\*/"
        r"|(?P<define>#define (?P<dname>SPOT_\w+) (?P<dvalue>[^\n]+))"
        r"|(?P<struct>struct (?P<sname>\w+) \{(?P<sbody>.*?)\n\};)"
        r"|(?P<fnptr>typedef (?P<fret>[\w ]+?) \(\*(?P<fname>\w+)\)\((?P<fparams>[^)]*)\);)"
        r"|(?P<alias>typedef [^;(]+;)"
        r"|(?P<func>(?P<ret>[\w ]+?\**) ?(?P<name>spot_\w+)\((?P<params>[^)]*)\);)",
        re.S)
    for m in token.finditer(body, pos):
        if m.group("doc") is not None:
            lines = [re.sub(r"^\s*\* ?", "", l) for l in m.group("doc").strip("\n").split("\n")]
            doc = "\n".join(lines).strip()
            continue
        if m.group("define"):
            yield doc, "define", (m.group("dname"), m.group("dvalue").strip())
        elif m.group("struct"):
            fields, fdoc = [], None
            for f in re.finditer(r"/\*\*(.*?)\*/|([^;/]+);", m.group("sbody"), re.S):
                if f.group(1) is not None:
                    fdoc = "\n".join(re.sub(r"^\s*\* ?", "", l) for l in f.group(1).strip("\n").split("\n")).strip()
                else:
                    fields.append((fdoc, split_decl(f.group(2))))
                    fdoc = None
            yield doc, "struct", (m.group("sname"), fields)
        elif m.group("fnptr"):
            yield doc, "fnptr", (m.group("fret"), m.group("fname"), m.group("fparams"))
        elif m.group("func"):
            yield doc, "func", (m.group("ret"), m.group("name"), m.group("params"))
        doc = None


def check_complete(header, items):
    """Fails when the header declares something the parser passed over: a mirror that
    silently lacks a declaration would be worse than none."""
    body = header.split('extern "C" {', 1)[1]
    expected = {
        "define": len(re.findall(r"^\s*#\s*define\s+SPOT_", body, re.M)),
        "struct": len(re.findall(r"^struct\s+\w+\s*\{", body, re.M)),
        "fnptr": len(re.findall(r"^typedef [^;]*\(\*", body, re.M)),
        "func": len(re.findall(r"^(?!typedef|#|struct|\s)[^\n;]*?\bspot_\w+\s*\(", body, re.M)),
    }
    for kind, n in expected.items():
        got = sum(1 for item in items if item[1] == kind)
        if got != n:
            sys.exit("gen_interop.py: the header has {} {} declarations, parsed {}".format(n, kind, got))
    undocumented = [item[2][0] if item[1] != "func" else item[2][1] for item in items if not item[0]]
    if undocumented:
        sys.exit("gen_interop.py: undocumented in the header: " + ", ".join(map(str, undocumented)))


def public_view(struct, fields):
    """The public type that reads a counter struct: a long per field (struct_size and
    reserved are the ABI's, not the user's)."""
    name, kind = PUBLIC_VIEWS[struct]
    fields = [(doc, f) for doc, (_, f) in fields if f not in ("struct_size", "reserved")]
    member = lambda f: RENAMED.get(f, pascal(f))
    out = ["    public {} {}".format(kind, name), "    {",
           "        internal {}(ref {} s)".format(name, struct), "        {"]
    out += ["            {} = (long)s.{};".format(member(f), f) for _, f in fields]
    out += ["        }"]
    for doc, f in fields:
        out += doc_lines(doc, "        ") + ["        public long {} {{ get; }}".format(member(f))]
    return out + ["    }", ""]


def generate(header):
    status, consts, structs, delegates, funcs, views = [], [], [], [], [], []
    items = list(parse(header))
    check_complete(header, items)
    for doc, kind, data in items:
        if kind == "define":
            name, value = data
            if name == "SPOT_OK" or name.startswith("SPOT_E_"):
                member = "Ok" if name == "SPOT_OK" else pascal(name[len("SPOT_E_"):])
                status += doc_lines(name + ": " + doc, "        ")
                status.append("        {} = {},".format(member, value))
            else:
                consts += doc_lines(doc, "        ")
                consts.append("        " + constant(name[len("SPOT_"):], value))
        elif kind == "struct":
            name, fields = data
            structs += doc_lines(doc + "\n\nMirror of <c>struct {}</c>.".format(name), "    ")
            structs += ['    [NativeStruct("{}")]'.format(name), "    [StructLayout(LayoutKind.Sequential)]",
                        "    public struct " + name, "    {"]
            for fdoc, (ctype, fname) in fields:
                if fdoc:
                    structs += doc_lines(fdoc, "        ")
                structs.append("        public {} {};".format(cs_type(ctype, "field"), fname))
            structs += ["    }", ""]
            if name in PUBLIC_VIEWS:
                views += public_view(name, fields)
        elif kind == "fnptr":
            ret, name, ps = data
            delegates += doc_lines(doc, "    ")
            delegates += ["    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]",
                          "    internal unsafe delegate {} {}({});".format(cs_type(ret, "return"), name, params(ps)), ""]
        else:
            ret, name, ps = data
            funcs += doc_lines(doc, "        ")
            funcs += ["        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]",
                      "        public static extern {} {}({});".format(cs_type(ret, "return"), name, params(ps)), ""]
    out = [
        "// <auto-generated>",
        "// Generated by bindings/dotnet/gen_interop.py from include/spot_timer.h. Do not edit:",
        "// change the Rust sources, then `make header`.",
        "// </auto-generated>",
        "using System;",
        "using System.Runtime.InteropServices;",
        "",
        "namespace SpotTimer.Interop",
        "{",
        "    /// <summary>Status codes (<c>spot_status</c>).</summary>",
        "    public enum SpotStatus",
        "    {",
    ] + status + [
        "    }",
        "",
        "    /// <summary>The header's <c>#define</c> values (<c>SPOT_</c> + the name here).</summary>",
        "    public static class C",
        "    {",
    ] + consts + ["    }", ""] + structs + delegates + [
        "    public static unsafe partial class Native",
        "    {",
        "        /// <summary>The library P/Invoke loads (SpotTimer.dll.config maps it per platform).</summary>",
        '        public const string Lib = "spot_timer";',
        "",
    ] + funcs[:-1] + ["    }", "}", "", "namespace SpotTimer", "{", "    using SpotTimer.Interop;", ""] + views[:-1] + ["}"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(generate(f.read()))
