#!/usr/bin/python3
"""Generates bindings/julia/Hvd/src/LibHvd.jl from SWIG's XML parse trees.

Inputs (see bindings/julia/CMakeLists.txt for the swig commands):
  --hvd-xml     swig -xml of bindings/swig/hvd.i: functions, enums, typedefs,
                hvd_* structs and constants.
  --dlpack-xml  swig -xml of <dlpack/dlpack.h>: the DLPack structs. hvd.i
                declares only the scalar part of DLTensor (for SWIG's own
                wrappers), so the real layout is taken from the real header.

Output: one Julia module with an alias per enum/typedef, the enum values as
constants, isbits structs mirroring the C layouts (each field annotated with
the offset this script derives, checked against offsetof by
tests/julia/check_libhvd.py) and one ccall wrapper per hvd_* function.
Deterministic: the same inputs give the same bytes, so a test can compare the
committed file with a fresh one.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET

# C scalar types by SWIG name -> Julia type. stdint names come first because
# SWIG's stdint.i typedefs assume a 32-bit long.
SCALARS = {
    "void": "Cvoid", "char": "Cchar", "signed char": "Int8", "unsigned char": "UInt8",
    "short": "Cshort", "unsigned short": "Cushort", "int": "Cint", "unsigned int": "Cuint",
    "long": "Clong", "unsigned long": "Culong", "long long": "Clonglong",
    "unsigned long long": "Culonglong", "float": "Cfloat", "double": "Cdouble",
    "size_t": "Csize_t", "int8_t": "Int8", "uint8_t": "UInt8", "int16_t": "Int16",
    "uint16_t": "UInt16", "int32_t": "Int32", "uint32_t": "UInt32", "int64_t": "Int64",
    "uint64_t": "UInt64", "intptr_t": "Int", "uintptr_t": "UInt",
}
# (size, alignment) of the Julia types above on LP64 (x86-64, aarch64).
PRIMITIVE_LAYOUT = {
    "Cvoid": (0, 1), "Cchar": (1, 1), "Int8": (1, 1), "UInt8": (1, 1), "Cshort": (2, 2),
    "Cushort": (2, 2), "Int16": (2, 2), "UInt16": (2, 2), "Cint": (4, 4), "Cuint": (4, 4),
    "Int32": (4, 4), "UInt32": (4, 4), "Cfloat": (4, 4), "Clong": (8, 8), "Culong": (8, 8),
    "Clonglong": (8, 8), "Culonglong": (8, 8), "Csize_t": (8, 8), "Cdouble": (8, 8),
    "Int64": (8, 8), "UInt64": (8, 8), "Int": (8, 8), "UInt": (8, 8),
}
DLPACK_STRUCTS = ("DLDevice", "DLDataType", "DLTensor")
JULIA_KEYWORDS = {"begin", "end", "function", "type", "module", "import", "using", "export",
                  "global", "local", "let", "do", "if", "else", "for", "while", "struct",
                  "mutable", "abstract", "primitive", "macro", "quote", "return", "try",
                  "catch", "finally", "break", "continue", "const", "baremodule", "in"}


def attrs(node):
    al = node.find("attributelist")
    if al is None:
        return {}
    return {a.get("name"): a.get("value") for a in al.findall("attribute")}


def split_type(swig_type):
    """'p.q(const).char' -> (['p', 'q(const)'], 'char'); handles f(...) nesting."""
    parts, i = [], 0
    while True:
        m = re.match(r"(p|r|q\([^)]*\)|a\([^)]*\))\.", swig_type[i:])
        if m:
            parts.append(m.group(1))
            i += m.end()
            continue
        if swig_type.startswith("f(", i):
            depth, j = 0, i + 1
            while True:
                depth += {"(": 1, ")": -1}.get(swig_type[j], 0)
                j += 1
                if depth == 0:
                    break
            parts.append(swig_type[i:j])
            i = j + 1  # the '.' after f(...)
            continue
        return parts, swig_type[i:]


def split_params(inner):
    """Top-level comma split of an f(...) parameter list."""
    out, depth, cur = [], 0, ""
    for ch in inner:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + ([cur] if cur else [])


class Model:
    """What the generator needs from the two parse trees."""

    def __init__(self, hvd_xml, dlpack_xml):
        self.enums = []       # (name, [(item, value)])
        self.aliases = {}     # typedef name -> Julia type
        self.structs = {}     # name -> [(field, swig type)]
        self.struct_order = []
        self.constants = []   # (name, value)
        self.functions = []   # (name, return swig type, [(param, swig type)])
        self._read(dlpack_xml, dlpack=True)
        self._read(hvd_xml, dlpack=False)

    def _read(self, path, dlpack):
        root = ET.parse(path).getroot()
        for node in root.iter():
            a = attrs(node)
            name = a.get("name", "")
            # DLPack types come only from dlpack.h, everything else only from hvd.i.
            if name.startswith("DL") != dlpack and node.tag in ("enum", "class", "cdecl"):
                if not (node.tag == "cdecl" and a.get("kind") == "function"):
                    continue
            if node.tag == "enum" and name:
                items = [(attrs(i)["name"], int(attrs(i)["enumvalue"].rstrip("uUlL")))
                         for i in node.iter("enumitem")]
                self.enums.append((name, items))
                self.aliases[name] = "Cint"
            elif node.tag == "class" and a.get("kind") == "struct":
                if name in self.structs or (dlpack and name not in DLPACK_STRUCTS):
                    continue
                fields = []
                for m in node.findall("cdecl"):
                    ma = attrs(m)
                    if ma.get("ismember") == "1" and ma.get("kind") == "variable":
                        fields.append((ma["name"], ma.get("decl", "") + ma["type"]))
                self.structs[name] = fields
                self.struct_order.append(name)
            elif node.tag == "cdecl" and a.get("kind") == "typedef" and not dlpack:
                # Only hvd's own typedefs: stdint.i's are covered by SCALARS.
                if not name.startswith("hvd_") or name in self.aliases or name in self.structs:
                    continue
                full = a.get("decl", "") + a["type"]
                self.aliases[name] = self.julia_type(full, param=True)
            elif node.tag == "constant" and not dlpack and name.startswith("HVD_"):
                self.constants.append((name, a["value"]))
            elif (node.tag == "cdecl" and a.get("kind") == "function" and not dlpack
                  and a.get("ismember") != "1" and name.startswith("hvd_")):
                parts, _ = split_type(a["decl"])
                ret_decl = a["decl"][len(parts[0]) + 1:]
                params = [(attrs(p).get("name", f"arg{i}"), attrs(p)["type"])
                          for i, p in enumerate(node.iter("parm"))]
                if params == [("arg0", "void")]:
                    params = []
                self.functions.append((name, ret_decl + a["type"], params))

    def julia_type(self, swig_type, param):
        parts, base = split_type(swig_type)
        parts = [p for p in parts if not p.startswith("q(")]
        base = re.sub(r"^(const |enum |struct )+", "", base)
        if any(p.startswith("f(") for p in parts):
            return "Ptr{Cvoid}"  # function pointers are opaque here
        if parts == ["p"] and base == "char" and not param:
            return "Cstring"     # returned strings; parameters may be NULL
        jl = SCALARS.get(base, base)
        for p in parts:
            if p == "p":
                jl = f"Ptr{{{jl}}}"
            else:
                sys.exit(f"generate.py: unsupported SWIG type {swig_type}")
        return jl

    def layout(self, jl_type):
        """(size, align) of a Julia field type, C rules (= Julia isbits rules)."""
        jl_type = self.aliases.get(jl_type, jl_type)
        if jl_type.startswith("Ptr{") or jl_type == "Cstring":
            return 8, 8
        if jl_type in PRIMITIVE_LAYOUT:
            return PRIMITIVE_LAYOUT[jl_type]
        if jl_type in self.structs:
            return self.struct_layout(jl_type)[1:]
        sys.exit(f"generate.py: no layout for {jl_type}")

    def struct_layout(self, name):
        """([(field, julia type, offset)], size, align)."""
        out, offset, align = [], 0, 1
        for field, swig_type in self.structs[name]:
            jl = self.julia_type(swig_type, param=True)
            size, al = self.layout(jl)
            offset = (offset + al - 1) // al * al
            out.append((field, jl, offset))
            offset += size
            align = max(align, al)
        return out, (offset + align - 1) // align * align, align


def c_decl(swig_type, name=""):
    """A readable C spelling of a SWIG type, for the docstrings."""
    parts, base = split_type(swig_type)
    text = base
    for p in reversed(parts):  # from the base outwards
        if p == "p":
            text += "*"
        elif p.startswith("q("):
            text = f"{p[2:-1]} {text}" if "*" not in text else f"{text} {p[2:-1]}"
    return f"{text} {name}".strip()


def jl_name(name):
    return name + "_" if name in JULIA_KEYWORDS else name


def emit(model):
    out = ['# Generated by bindings/julia/gen/generate.py from bindings/swig/hvd.i and',
           '# <dlpack/dlpack.h>. Do not edit: regenerate (see bindings/julia/README.md).',
           '"""Low-level `ccall` wrappers for libhvd, one per C function."""',
           "module LibHvd", "",
           "# Resolved by the dynamic loader (LD_LIBRARY_PATH) or Libdl.DL_LOAD_PATH,",
           "# which Hvd.__init__ extends with ENV[\"HVD_LIBRARY_DIR\"].",
           'const libhvd = "libhvd"', ""]
    out.append("# ------------------------------------------------------------ constants")
    for name, value in model.constants:
        out.append(f"const {name} = {value}")
    for enum, items in model.enums:
        out.append("")
        out.append(f"const {enum} = Cint")
        for item, value in items:
            out.append(f"const {item} = {enum}({value})")
    out += ["", "# ------------------------------------------------------------- typedefs"]
    for name, jl in model.aliases.items():
        if name not in dict(model.enums):
            out.append(f"const {name} = {jl}")
    out += ["", "# ---------------------------------------------- structs (C layout, LP64)"]
    for name in model.struct_order:
        fields, size, _ = model.struct_layout(name)
        out.append(f"struct {name}  # sizeof {size}")
        for field, jl, offset in fields:
            out.append(f"    {jl_name(field)}::{jl}  # offset {offset}")
        out += ["end", ""]
    out.append("# ------------------------------------------------------------ functions")
    for name, ret, params in model.functions:
        args = ", ".join(jl_name(p) for p, _ in params)
        types = "".join(model.julia_type(t, param=True) + ", " for _, t in params)
        types = "(" + types.rstrip(", ") + ("," if len(params) == 1 else "") + ")"
        proto = ", ".join(c_decl(t, p) for p, t in params) or "void"
        out += ["", f'"C: `{c_decl(ret)} {name}({proto})`"',
                f"function {name}({args})",
                f"    ccall((:{name}, libhvd), {model.julia_type(ret, param=False)}, {types}"
                + (f", {args})" if args else ")"),
                "end"]
    out += ["", "end # module", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hvd-xml", required=True)
    ap.add_argument("--dlpack-xml", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    text = emit(Model(args.hvd_xml, args.dlpack_xml))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
