"""Regenerate converter/data/ep_kernels.json from an onnxruntime source tree.

python scripts/gen_ep_kernels.py SRC [--rev REV] [--out PATH]

SRC is an onnxruntime checkout, or a bare git directory (then files are read at REV, default
HEAD). The file records, per execution provider, every registered kernel as
``"domain::Op": [[since, until_or_null, [element types of the main constraint] or null], ...]``
plus the source commit. Where each EP's data comes from:

- cpu, cuda, dml: ``docs/OperatorKernels.md``, the table onnxruntime generates from its kernel
  registries (sections CPUExecutionProvider, CUDAExecutionProvider, DmlExecutionProvider).
- webgpu: the native WebGPU EP's registration tables, which OperatorKernels.md does not cover:
  ``onnxruntime/core/providers/webgpu/webgpu_execution_provider.cc`` (the kernel table and
  ``RegisterKernels``) and ``onnxruntime/contrib_ops/webgpu/webgpu_contrib_kernels.cc``.
  Element types come from the kernel definitions (``ONNX_OPERATOR_*_KERNEL_EX`` macros and
  ``KernelDefBuilder().SetName(...)`` chains) under ``onnxruntime/core/providers/webgpu/`` and
  ``onnxruntime/contrib_ops/webgpu/``. Kernels registered only when int64 support is enabled are
  included; types the script cannot resolve are recorded as null (unknown).

The "main" constraint of an op is ``T`` when an input uses it, else the constraint of the first
typed input; ``main_input`` lists the ops whose main constraint is not on input 0. Internal
domains (NHWC/NCHWc layouts, com.microsoft.dml) and Memcpy kernels are left out: a model never
names them.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import onnx

OUT = Path(__file__).parents[1] / "converter" / "data" / "ep_kernels.json"
DOC_SECTIONS = {
    "CPUExecutionProvider": "cpu",
    "CUDAExecutionProvider": "cuda",
    "DmlExecutionProvider": "dml",
}
PUBLIC_DOMAINS = {"ai.onnx", "ai.onnx.ml", "com.microsoft"}
WEBGPU_DIRS = ("onnxruntime/core/providers/webgpu/", "onnxruntime/contrib_ops/webgpu/")
WEBGPU_EP = "onnxruntime/core/providers/webgpu/webgpu_execution_provider.cc"
WEBGPU_CONTRIB = "onnxruntime/contrib_ops/webgpu/webgpu_contrib_kernels.cc"
CPP_DOMAINS = {"kOnnxDomain": "ai.onnx", "kMSDomain": "com.microsoft", "kMsDomain": "com.microsoft"}
CPP_TYPES = {
    "MLFloat16": "float16",
    "BFloat16": "bfloat16",
    "Int4x2": "int4",
    "UInt4x2": "uint4",
    "Int2x4": "int2",
    "UInt2x4": "uint2",
    "Float4E2M1x2": "float4e2m1",
    "std::string": "string",
}

REGISTERED = (
    r"BuildKernelCreateInfo<\s*(?:class\s+)?"
    r"ONNX_OPERATOR(_VERSIONED)?(_TYPED)?_KERNEL_CLASS_NAME\(([^)]*)\)"
)
Entry = list  # [since, until | None, sorted types | None]


class Source:
    """Reads files from a checkout or from a bare git directory at one revision."""

    def __init__(self, path: Path, rev: str) -> None:
        self.path, self.rev = path, rev
        self.bare = not (path / ".git").exists() and (path / "HEAD").is_file()
        self.commit = self._git("rev-parse", rev if self.bare else "HEAD").strip()

    def _git(self, *args: str) -> str:
        flag = ["--git-dir", str(self.path)] if self.bare else ["-C", str(self.path)]
        return subprocess.run(
            ["git", *flag, *args], check=True, capture_output=True
        ).stdout.decode()

    def read(self, rel: str) -> str:
        if self.bare:
            return self._git("show", f"{self.rev}:{rel}")
        return (self.path / rel).read_text(encoding="utf-8")

    def files(self, prefix: str) -> list[str]:
        if self.bare:
            return self._git("ls-tree", "-r", "--name-only", self.rev, prefix).split()
        return [str(p.relative_to(self.path)) for p in (self.path / prefix).rglob("*")]


# ---------------------------------------------------------------- OperatorKernels.md


def _versions(cell: str) -> tuple[int, int | None]:
    cell = cell.strip()
    if cell.endswith("+"):
        return int(cell[:-1]), None
    if cell.startswith("["):
        lo, hi = cell.strip("[]").split(",")
        return int(lo), int(hi)
    return int(cell), int(cell)


def _doc_type(text: str) -> str:
    return re.sub(r"tensor\((\w+)\)", r"\1", text.strip())


def _constraints(cell: str) -> dict[str, list[str]]:
    out = {}
    for part in cell.split("<br/>"):
        m = re.match(r"\s*\*\*(\w+)\*\* = (.*)", part)
        if m:
            out[m[1]] = sorted({_doc_type(t) for t in m[2].split(", ")})
    return out


def _alternatives(cell: str) -> list[list[str]]:
    """Constraint (or fixed type) of each input, per signature the op has had."""
    return [
        re.findall(r"\*in\* [\w.]*:\*\*([^*]+)\*\*", alt)
        for alt in cell.split("<br><br>or<br><br>")
    ]


def main_constraint(inputs: list[str], names: set[str]) -> tuple[str | None, int]:
    """The constraint that names an op's element type, and the input it is read from."""
    if "T" in inputs and "T" in names:
        return "T", inputs.index("T")
    for i, c in enumerate(inputs):
        if c in names:
            return c, i
    return None, 0


def pick(alts: list[list[str]], names: set[str]) -> list[str]:
    """The signature whose constraints a kernel lists (the newest on a tie)."""
    return max(reversed(alts), key=lambda a: len(set(a) & names)) if alts else []


def main_of(alts: list[list[str]], names: list[str]) -> str | None:
    """Main constraint of a kernel that declares the constraints names, in that order."""
    name, _ = main_constraint(pick(alts, set(names)), set(names))
    return name or ("T" if "T" in names else next(iter(names), None))


def parse_operator_kernels(
    text: str,
) -> tuple[dict[str, dict[str, list[Entry]]], dict[str, list[list[str]]]]:
    """{ep: {key: entries}} and {key: input constraints per signature} from OperatorKernels.md."""
    eps: dict[str, dict[str, list[Entry]]] = {}
    signatures: dict[str, list[list[str]]] = {}
    ep = domain = key = None
    alts: list[list[str]] = []
    for line in text.splitlines():
        if m := re.match(r"## Operators implemented by (\w+)", line):
            ep = DOC_SECTIONS.get(m[1])
            if ep:
                eps[ep] = {}
            continue
        if m := re.match(r"\|\*\*Operator Domain:\*\* \*([\w.]+)\*", line):
            domain = m[1]
            continue
        cells = line.split("|")
        if ep is None or len(cells) != 6 or not re.match(r"\[?\d", cells[3].strip()):
            continue
        if cells[1]:
            key, alts = f"{domain}::{cells[1]}", _alternatives(cells[2])
        if domain not in PUBLIC_DOMAINS or key is None:
            continue
        since, until = _versions(cells[3])
        cons = _constraints(cells[4])
        if cells[1] and key not in signatures:
            newest = pick(alts, set(cons))  # first row: the newest kernel
            signatures[key] = [newest] + [a for a in alts if a is not newest]
        name, _ = main_constraint(pick(alts, set(cons)), set(cons))
        eps[ep].setdefault(key, []).append([since, until, cons.get(name) if name else None])
    return eps, signatures


# ---------------------------------------------------------------- WebGPU sources


def strip_comments(text: str) -> str:
    text = re.sub(r'R"(\w*)\((.*?)\)\1"', '""', text, flags=re.S)
    pattern = r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/'
    return re.sub(pattern, lambda m: m[0] if m[0][0] in "\"'" else " ", text, flags=re.S)


def balanced(text: str, start: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket matching text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def split_args(text: str) -> list[str]:
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch in "(<{[":
            depth += 1
        elif ch in ")>}]":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*args, cur.strip()] if cur.strip() else args


def macros(text: str) -> dict[str, tuple[list[str], str]]:
    out = {}
    for m in re.finditer(
        r"^[ \t]*#define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", text, re.M
    ):
        params = [p.strip() for p in m[2].split(",") if p.strip()]
        out[m[1]] = (params, m[3].replace("\\\n", " "))
    return out


def substitute(params: list[str], body: str, args: list[str]) -> str:
    """A macro body with its parameters replaced (#x stringifies, a ## b pastes)."""
    values = dict(zip(params, args, strict=False))
    if params and params[-1] == "...":
        values = dict(zip(params[:-1], args, strict=False))
        values["__VA_ARGS__"] = ", ".join(args[len(params) - 1 :])
    body = re.sub(r"\s*##\s*", "\0", body)
    body = re.sub(r"#\s*(\w+)", lambda x: f'"{values.get(x[1], x[1])}"', body)
    return re.sub(r"\b(\w+)\b", lambda x: values.get(x[1], x[1]), body).replace("\0", "")


def expand(text: str, defs: dict[str, tuple[list[str], str]]) -> str:
    """Expand function-like macros (enough for kernel registration macros)."""
    text = re.sub(r"^[ \t]*#define[^\n]*(?:\\\n[^\n]*)*", "", text, flags=re.M)
    if not defs:
        return text
    call = re.compile(r"\b(" + "|".join(map(re.escape, defs)) + r")\s*\(")
    for _ in range(8):
        out, pos = [], 0
        for m in call.finditer(text):
            if m.start() < pos:
                continue
            end = balanced(text, m.end() - 1)
            out += [
                text[pos : m.start()],
                substitute(*defs[m[1]], split_args(text[m.end() : end - 1])),
            ]
            pos = end
        if not out:
            break
        text = "".join([*out, text[pos:]])
    return text


def onnx_type(cpp: str) -> str:
    cpp = cpp.strip()
    return CPP_TYPES.get(cpp) or re.sub(r"_t$", "", cpp).lower()


class WebGpu:
    """Kernel registrations of the native WebGPU EP, read from its C++ sources."""

    def __init__(self, src: Source) -> None:
        paths = [p for d in WEBGPU_DIRS for p in src.files(d) if p.endswith((".cc", ".h"))]
        raw = {p: strip_comments(src.read(p)) for p in paths}
        header_macros = {
            k: v for p, t in raw.items() if p.endswith(".h") for k, v in macros(t).items()
        }
        self.text = {p: expand(t, {**header_macros, **macros(t)}) for p, t in raw.items()}
        self.aliases = {
            m[1]: split_args(m[2])
            for t in self.text.values()
            for m in re.finditer(r"using\s+(\w+)\s*=\s*TypeList<([^;]*)>\s*;", t)
        }
        self.defs = self._kernel_defs()

    # -- type expressions

    def function_body(self, name: str) -> str | None:
        head = re.compile(
            r"\b" + re.escape(name) + r"\s*\([^;{}()]*(?:\([^()]*\)[^;{}()]*)*\)\s*(?:const\s*)?\{"
        )
        for t in self.text.values():
            if m := head.search(t):
                return t[m.end() - 1 : balanced(t, m.end() - 1, "{", "}")]
        return None

    def types(self, expr: str, ctx: str = "", depth: int = 0) -> set[str] | None:
        """Element types a TypeConstraint(...) argument stands for; None when unknown."""
        expr = re.sub(r"\b\w+::(?=\w)(?!GetTensorType)", "", expr).strip()
        if m := re.fullmatch(r"move\((.*)\)", expr, re.S):
            expr = m[1].strip()
        if depth > 6:
            return None
        if re.fullmatch(r"\w+", expr) and not expr[0].isupper():
            return self._variable(expr, ctx, depth)
        found = {onnx_type(m[1]) for m in re.finditer(r"GetTensorType<([^<>]+)>", expr)}
        for m in re.finditer(r"(?:TypeList|BuildKernelDefConstraints)\s*<([^<>]*)>", expr):
            for name in split_args(m[1]):
                found |= {onnx_type(t) for t in self.aliases.get(name, [name])}
        for m in re.finditer(r"\b(\w*(?:Types|Constraints?))\s*\(", expr):
            if m[1].startswith("BuildKernelDefConstraints") or m[1] == "TypeConstraint":
                continue
            body = self.function_body(m[1])
            sub = self.types(body, body, depth + 1) if body else None
            if sub is None:
                return None
            found |= sub
        return found or None

    def _variable(self, name: str, ctx: str, depth: int) -> set[str] | None:
        assign = list(re.finditer(r"\b" + name + r"\s*(?:=|\{)([^;]*);", ctx))
        if not assign:
            return None
        found = self.types(assign[-1][1], ctx[: assign[-1].start()], depth + 1)
        if found is None:
            return None
        for m in re.finditer(r"\b" + name + r"\.(?:push_back|emplace_back)\(([^;]*)\);", ctx):
            found |= self.types(m[1], "", depth + 1) or set()
        return found

    # -- kernel definitions

    def _kernel_defs(self) -> dict[tuple, list[tuple[dict[str, str], str]]]:
        """(domain, op, since, until, type) -> [(constraint exprs, context)]."""
        defs: dict[tuple, list[tuple[dict[str, str], str]]] = {}
        layouts = {"ONNX_OPERATOR_KERNEL_EX": (3, None), "ONNX_OPERATOR_TYPED_KERNEL_EX": (3, 3)}
        layouts |= {"ONNX_OPERATOR_VERSIONED_KERNEL_EX": (4, None)}
        layouts |= {"ONNX_OPERATOR_VERSIONED_TYPED_KERNEL_EX": (4, 4)}
        for text in self.text.values():
            for m in re.finditer(r"\b(ONNX_OPERATOR_\w*KERNEL_EX)\s*\(", text):
                if m[1] not in layouts:
                    continue
                args = split_args(text[m.end() : balanced(text, m.end() - 1) - 1])
                nver, typed = layouts[m[1]]
                if not all(a.isdigit() for a in args[2:nver]):
                    continue
                vers = [int(a) for a in args[2:nver]]
                until = vers[1] if len(vers) > 1 else None
                type_ = onnx_type(args[typed]) if typed else None
                builder = args[nver + (1 if typed else 0) + 1]
                key = (CPP_DOMAINS.get(args[1]), args[0], vers[0], until, type_)
                defs.setdefault(key, []).append((self._constraints(builder), text[: m.start()]))
            for m in re.finditer(r"\.SetName\(", text):
                key = self._chain(text[m.start() :])
                if key is None:
                    continue
                ctx = text[max(0, text.rfind("\n}", 0, m.start())) : m.start()]
                stmt = text[m.start() : text.find(";", m.start())]
                defs.setdefault(key, []).append((self._constraints(stmt), ctx))
        return defs

    @staticmethod
    def _chain(text: str) -> tuple | None:
        """(domain, op, since, until, None) of the first KernelDefBuilder chain in text."""
        name = re.search(r"\.SetName\(\"(\w+)\"\)", text)
        if not name:
            return None
        stmt = text[name.start() : text.find(";", name.start())]
        dom = re.search(r"\.SetDomain\((\w+)\)", stmt)
        ver = re.search(r"\.SinceVersion\(([^)]*)\)", stmt)
        vers = split_args(ver[1]) if ver else []
        since = int(vers[0]) if vers and vers[0].isdigit() else None
        until = int(vers[1]) if since is not None and len(vers) > 1 else None
        return CPP_DOMAINS.get(dom[1] if dom else ""), name[1], since, until, None

    @staticmethod
    def _constraints(builder: str) -> dict[str, str]:
        out = {}
        for m in re.finditer(r"\.TypeConstraint\(\s*\"(\w+)\"\s*,", builder):
            end = balanced(builder, m.start() + len(".TypeConstraint"))
            out.setdefault(m[1], builder[m.end() : end - 1])
        return out

    def def_types(self, key: tuple, alts: list[list[str]], tmpl: list[str]) -> set[str] | None:
        found: set[str] = set()
        for cons, ctx in self.defs.get(key, []):
            main = main_of(alts, list(cons))
            if main not in cons:
                return None
            expr = cons[main]
            if tmpl and re.search(r"GetTensorType<\s*T\s*>", expr):
                found |= {onnx_type(t) for t in tmpl}
                continue
            sub = self.types(expr, ctx)
            if sub is None:
                return None
            found |= sub
        return found or None

    # -- registrations

    def registrations(self) -> Iterator[tuple[str, str, int, int | None, tuple, list[str]]]:
        """(domain, op, since, until, definition key, template args) per registered kernel."""
        for path in (WEBGPU_EP, WEBGPU_CONTRIB):
            yield from self._registered(self.text[path])

    def _registered(self, text: str, depth: int = 0) -> Iterator[tuple]:
        for m in re.finditer(REGISTERED, text):
            args = split_args(m[3])
            domain, op = CPP_DOMAINS.get(args[1]), args[-1]
            since = int(args[2])
            until = int(args[3]) if m[1] else None
            type_ = onnx_type(args[-2]) if m[2] else None
            yield domain, op, since, until, (domain, op, since, until, type_), []
        for m in re.finditer(r"\b(Create\w+KernelInfo)\s*(?:<([^<>]*)>)?\s*\(", text):
            chain = self._chain(self.function_body(m[1]) or "")
            if chain is None:
                continue
            tmpl = split_args(m[2] or "")
            if chain[2] is not None:
                since, until = chain[2], chain[3]
            elif tmpl and all(t.isdigit() for t in tmpl):
                since, until = int(tmpl[0]), int(tmpl[1]) if len(tmpl) > 1 else None
            else:
                continue
            types_tmpl = [] if all(t.isdigit() for t in tmpl) else tmpl
            yield chain[0], chain[1], since, until, chain, types_tmpl
        if depth < 2:
            for m in re.finditer(r"\b(Register\w+Kernels)\(\s*\*?kernel_registry", text):
                body = self.function_body(m[1])
                if body:
                    yield from self._registered(body, depth + 1)


def parse_webgpu(src: Source, signatures: dict[str, list[list[str]]]) -> dict[str, list[Entry]]:
    gpu = WebGpu(src)
    merged: dict[str, dict[tuple[int, int | None], set[str] | None]] = {}
    for domain, op, since, until, key, tmpl in gpu.registrations():
        if domain not in PUBLIC_DOMAINS or op.startswith("Memcpy"):
            continue
        full = f"{domain}::{op}"
        alts = signatures.get(full) or [_schema_inputs(domain, op)]
        types = gpu.def_types(key, alts, tmpl)
        slot = merged.setdefault(full, {})
        if (since, until) in slot:
            old = slot[(since, until)]
            types = None if old is None or types is None else old | types
        slot[(since, until)] = types
    return {
        key: sorted(
            ([s, u, sorted(t) if t else None] for (s, u), t in slots.items()),
            key=lambda e: -e[0],
        )
        for key, slots in sorted(merged.items())
    }


def _schema_inputs(domain: str, op: str) -> list[str]:
    try:
        schema = onnx.defs.get_schema(op, "" if domain == "ai.onnx" else domain)
    except onnx.defs.SchemaError:
        return []
    return [i.type_str for i in schema.inputs]


# ---------------------------------------------------------------- main


def generate(src: Source) -> dict:
    doc_path = "docs/OperatorKernels.md"
    eps, signatures = parse_operator_kernels(src.read(doc_path))
    eps["webgpu"] = parse_webgpu(src, signatures)
    main_input = {}
    for key in sorted({k for kernels in eps.values() for k in kernels}):
        inputs = signatures.get(key, [_schema_inputs(*key.split("::"))])[0]
        _, index = main_constraint(inputs, {c for c in inputs if "(" not in c})
        if index:
            main_input[key] = index
    version = src.read("VERSION_NUMBER").strip()
    return {
        "source": {
            "repo": "microsoft/onnxruntime",
            "commit": src.commit,
            "version": version,
            "files": {
                "cpu": doc_path,
                "cuda": doc_path,
                "dml": doc_path,
                "webgpu": f"{WEBGPU_EP}, {WEBGPU_CONTRIB} (+ kernel definitions under "
                + ", ".join(WEBGPU_DIRS)
                + ")",
            },
            "generator": "scripts/gen_ep_kernels.py",
        },
        "main_input": main_input,
        **{ep: dict(sorted(eps[ep].items())) for ep in ("cpu", "cuda", "dml", "webgpu")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="onnxruntime checkout or bare git directory")
    parser.add_argument("--rev", default="HEAD", help="revision to read in a bare git directory")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = generate(Source(args.src, args.rev))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    counts = ", ".join(f"{ep} {len(data[ep])}" for ep in ("cpu", "cuda", "dml", "webgpu"))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes; ops: {counts})")


if __name__ == "__main__":
    main()
