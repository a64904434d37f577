#!/usr/bin/python3
"""Checks the generated Julia ccall layer against the real C library.

Independently of bindings/julia/gen/generate.py, this script
  1. reads every `ccall((:sym, libhvd), Ret, (Args...), ...)` in LibHvd.jl;
  2. checks that libhvd.so exports `sym` (nm -D --defined-only);
  3. parses hvd.h itself (after the C preprocessor) and checks the argument
     count and every argument/return type (base type and pointer depth, with
     enums as 32-bit ints and typedefs resolved), and that every function of
     the header has a wrapper;
  4. compiles a probe with the C compiler that prints sizeof/offsetof of every
     Julia struct field, and compares it with the offsets computed here from
     the Julia field types and with the `# offset`/`# sizeof` comments the
     generator wrote.
With --self-test it instead corrupts copies of LibHvd.jl in several ways and
fails unless every corruption is detected.
Exit status 0 = all good; the problems are printed otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

JL_SCALARS = {  # Julia type -> (canonical C type, size, align)
    "Cvoid": ("void", 0, 1), "Cchar": ("char", 1, 1), "Int8": ("i8", 1, 1),
    "UInt8": ("u8", 1, 1), "Int16": ("i16", 2, 2), "Cshort": ("i16", 2, 2),
    "UInt16": ("u16", 2, 2), "Cushort": ("u16", 2, 2), "Cint": ("i32", 4, 4),
    "Int32": ("i32", 4, 4), "Cuint": ("u32", 4, 4), "UInt32": ("u32", 4, 4),
    "Cfloat": ("f32", 4, 4), "Int64": ("i64", 8, 8), "Clonglong": ("i64", 8, 8),
    "Clong": ("i64", 8, 8), "Int": ("i64", 8, 8), "UInt64": ("u64", 8, 8),
    "Culonglong": ("u64", 8, 8), "Culong": ("u64", 8, 8), "Csize_t": ("u64", 8, 8),
    "UInt": ("u64", 8, 8), "Cdouble": ("f64", 8, 8), "Float64": ("f64", 8, 8),
}
C_SCALARS = {
    "void": "void", "char": "char", "signed char": "i8", "unsigned char": "u8",
    "int8_t": "i8", "uint8_t": "u8", "short": "i16", "int16_t": "i16", "uint16_t": "u16",
    "int": "i32", "int32_t": "i32", "unsigned": "u32", "unsigned int": "u32",
    "uint32_t": "u32", "int64_t": "i64", "long": "i64", "long long": "i64",
    "uint64_t": "u64", "size_t": "u64", "unsigned long": "u64", "float": "f32",
    "double": "f64",
    # glibc's <stdint.h> spellings after preprocessing (LP64)
    "signed char": "i8", "short int": "i16", "signed short int": "i16",
    "unsigned short int": "u16", "unsigned short": "u16", "signed int": "i32",
    "long int": "i64", "signed long int": "i64", "unsigned long int": "u64",
    "long long int": "i64", "unsigned long long int": "u64",
}


def split_top(text, sep=","):
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(ch, 0)
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


# ------------------------------------------------------------- Julia side

class JuliaFile:
    def __init__(self, text):
        self.aliases = dict(re.findall(r"^const (\w+) = ([A-Za-z][\w{}]*)\s*$", text, re.M))
        self.structs = {}  # name -> (sizeof comment, [(field, type, offset comment)])
        for m in re.finditer(r"^struct (\w+)  # sizeof (\d+)\n(.*?)^end", text, re.M | re.S):
            fields = re.findall(r"^\s+(\w+)::(\S+)  # offset (\d+)$", m.group(3), re.M)
            self.structs[m.group(1)] = (int(m.group(2)), [(f, t, int(o)) for f, t, o in fields])
        self.ccalls = []  # (name, ret, [args])
        for m in re.finditer(r"ccall\(\(:(\w+), libhvd\), (.*)$", text, re.M):
            body = m.group(2)
            assert body.endswith(")"), m.group(0)
            parts = split_top(body[:-1])  # drop the closing paren of ccall(
            args = parts[1].strip()
            assert args.startswith("(") and args.endswith(")"), m.group(0)
            self.ccalls.append((m.group(1), parts[0], split_top(args[1:-1])))

    def canon(self, jl):
        """Julia type -> (base, pointer depth)."""
        depth = 0
        while True:
            jl = self.aliases.get(jl, jl)
            if jl == "Cstring":
                return ("char", depth + 1)
            m = re.fullmatch(r"Ptr\{(.*)\}", jl)
            if not m:
                break
            depth, jl = depth + 1, m.group(1)
        return (JL_SCALARS[jl][0] if jl in JL_SCALARS else jl, depth)

    def layout(self, jl):
        """(size, align) from Julia's isbits rules (those of C)."""
        jl = self.aliases.get(jl, jl)
        if jl.startswith("Ptr{") or jl == "Cstring":
            return 8, 8
        if jl in JL_SCALARS:
            return JL_SCALARS[jl][1:]
        if jl in self.structs:
            offsets, size, align = self.struct_offsets(jl)
            return size, align
        raise KeyError(f"no layout for Julia type {jl}")

    def struct_offsets(self, name):
        offsets, off, align = [], 0, 1
        for _, jl, _ in self.structs[name][1]:
            size, al = self.layout(jl)
            off = (off + al - 1) // al * al
            offsets.append(off)
            off += size
            align = max(align, al)
        return offsets, (off + align - 1) // align * align, align


# ----------------------------------------------------------------- C side

def parse_header(header, includes, cc):
    cmd = [cc, "-E", "-P"] + [f"-I{i}" for i in includes] + [header]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    text = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", "", text)
    aliases, protos = {}, {}
    for m in re.finditer(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", text):
        aliases[m.group(1)] = "int32_t"  # C enums of small values are ints
    for m in re.finditer(r"typedef\s+[^;{}()]*\(\s*\*\s*(\w+)\s*\)\s*\([^;]*\)\s*;", text):
        aliases[m.group(1)] = "void*"     # function pointer typedefs
    for m in re.finditer(r"typedef\s+([\w\s]+?)\s+(\w+)\s*;", text):
        aliases.setdefault(m.group(2), m.group(1).strip())
    for stmt in re.split(r"[;{}]", text):
        m = re.fullmatch(r"\s*([\w\s\*]+?)\s*\b(hvd_\w+)\s*\(([^()]*)\)\s*", stmt)
        if m and "typedef" not in m.group(1):
            params = [p.strip() for p in m.group(3).split(",")]
            if params == ["void"]:
                params = []
            protos[m.group(2)] = (m.group(1), params)

    def canon(decl, has_name):
        decl = decl.replace("*", " * ")
        words = [w for w in decl.split() if w != "const"]
        if has_name and words and words[-1] not in ("*",) and len(words) > 1:
            words = words[:-1]  # the parameter name
        depth = words.count("*")
        base = " ".join(w for w in words if w != "*")
        while base in aliases:
            target = aliases[base]
            if target == "void*":
                base, depth = "void", depth + 1
            else:
                base = target
        return (C_SCALARS.get(base, base), depth)

    return {name: (canon(ret, False), [canon(p, True) for p in params])
            for name, (ret, params) in protos.items()}


def exported_symbols(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    # "000... T hvd_init@@HVD_1": drop the symbol version.
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def c_layouts(jf, header_includes, cc):
    """{struct: (sizeof, {field: offset})} from a compiled offsetof probe."""
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <hvd/hvd.h>",
             "int main(void) {"]
    for s, (_, fields) in jf.structs.items():
        lines.append(f'  printf("{s} sizeof %zu\\n", sizeof({s}));')
        for f, _, _ in fields:
            lines.append(f'  printf("{s} {f} %zu\\n", offsetof({s}, {f}));')
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        build = subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-o", exe, src]
                               + [f"-I{i}" for i in header_includes],
                               capture_output=True, text=True)
        if build.returncode != 0:
            return None, build.stderr
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        s, key, value = line.split()
        size, offs = result.setdefault(s, [0, {}])
        if key == "sizeof":
            result[s][0] = int(value)
        else:
            offs[key] = int(value)
    return result, ""


# ------------------------------------------------------------------ checks

def check(text, args):
    problems = []
    jf = JuliaFile(text)
    header = parse_header(args.header, args.include, args.cc)
    symbols = exported_symbols(args.lib)
    if not jf.ccalls:
        problems.append("no ccall found in the Julia file")
    wrapped = set()
    for name, ret, jl_args in jf.ccalls:
        wrapped.add(name)
        if name not in symbols:
            problems.append(f"{name}: not exported by {args.lib}")
        if name not in header:
            problems.append(f"{name}: not declared in {args.header}")
            continue
        c_ret, c_params = header[name]
        if len(jl_args) != len(c_params):
            problems.append(f"{name}: {len(jl_args)} arguments, the header has {len(c_params)}")
            continue
        if jf.canon(ret) != c_ret:
            problems.append(f"{name}: returns {ret} {jf.canon(ret)}, the header {c_ret}")
        for i, (jl, c) in enumerate(zip(jl_args, c_params)):
            if jf.canon(jl) != c:
                problems.append(f"{name}: argument {i + 1} is {jl} {jf.canon(jl)}, the header {c}")
    for name in sorted(set(header) - wrapped):
        problems.append(f"{name}: declared in the header but has no ccall wrapper")

    layouts, err = c_layouts(jf, args.include, args.cc)
    if layouts is None:
        return problems + [f"offsetof probe does not compile (a field the C struct lacks?):\n{err}"]
    for s, (size_comment, fields) in jf.structs.items():
        offsets, size, _ = jf.struct_offsets(s)
        c_size, c_offs = layouts[s]
        if not (size == size_comment == c_size):
            problems.append(f"{s}: sizeof Julia {size}, generator comment {size_comment}, C {c_size}")
        for (f, jl, comment), off in zip(fields, offsets):
            if not (off == comment == c_offs[f]):
                problems.append(f"{s}.{f}::{jl}: offset Julia {off}, generator comment {comment}, "
                                f"C {c_offs[f]}")
    return problems


MUTATIONS = [  # (what, regex, replacement): each must make check() fail
    ("argument dropped", r"\(hvd_handle, Int64\), handle, timeout_ms", "(hvd_handle,), handle"),
    ("argument type narrowed", r"\(hvd_handle, Int64\)", "(hvd_handle, Int32)"),
    ("pointer depth", r"\(Ptr\{Cchar\}, Ptr\{DLTensor\}, Ptr\{hvd_op_options\}",
     "(Ptr{Cchar}, DLTensor, Ptr{hvd_op_options}"),
    ("return type", r"ccall\(\(:hvd_rank, libhvd\), Cint", "ccall((:hvd_rank, libhvd), Int64"),
    ("unknown symbol", r":hvd_barrier,", ":hvd_barier,"),
    ("field type", r"ndim::Cint  # offset 16", "ndim::Int64  # offset 16"),
    ("field order", r"(    ndim::Cint  # offset 16\n)(    dtype::DLDataType  # offset 20\n)",
     r"\2\1"),
    ("offset comment", r"byte_offset::UInt64  # offset 40", "byte_offset::UInt64  # offset 44"),
    ("missing wrapper", r'"C: `hvd_status hvd_stop_timeline\(void\)`"\nfunction hvd_stop_timeline\(\)\n.*\nend\n',
     ""),
]


def self_test(text, args):
    failures = ["unmodified file: " + p for p in check(text, args)]
    for what, pattern, repl in MUTATIONS:
        mutated, n = re.subn(pattern, repl, text)
        if n == 0:
            failures.append(f"mutation '{what}' did not apply (update MUTATIONS)")
        elif not check(mutated, args):
            failures.append(f"mutation '{what}' was not detected")
        else:
            print(f"ok: detected '{what}'")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--julia", required=True, help="LibHvd.jl")
    ap.add_argument("--lib", required=True, help="libhvd.so")
    ap.add_argument("--header", required=True, help="hvd/hvd.h")
    ap.add_argument("--include", action="append", default=[], help="-I for the header")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    with open(args.julia, encoding="utf-8") as f:
        text = f.read()
    problems = self_test(text, args) if args.self_test else check(text, args)
    for p in problems:
        print("FAIL:", p)
    if not problems and not args.self_test:
        jf = JuliaFile(text)
        print(f"ok: {len(jf.ccalls)} ccalls and {len(jf.structs)} structs match the C library")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
