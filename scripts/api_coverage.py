#!/usr/bin/python3
"""weft's coverage of TF 2.4's APIs, generated from the C++ headers, and the docs' tables of it.

  api_coverage.py              prints the coverage tables (markdown) and a count per kind
  api_coverage.py --write      rewrites the generated parts of the docs: docs/training.md's
                               <!-- api-coverage:begin/end --> block, docs/numpy.md's
                               <!-- np-coverage:begin/end --> block and README.md's count
  api_coverage.py --check      exit 1, saying what to do, when a listed name is not covered and
                               is not in EXPECTED_GAPS below, when a name in EXPECTED_GAPS is now
                               covered, or when a generated part of the docs differs (with a diff)
  --lib LIBWEFT.so             with any mode: also exit 1 when a function or class the tables
                               count is declared in a header but not defined in the library
                               (`nm -DC --defined-only`)
  api_coverage.py --self-test  renames a layer class in a copy of the tree and expects --check to
                               fail naming it (and to fail on an expected gap that was filled)
  --root DIR                   measure the tree at DIR instead of this script's repository

The reference lists are the `## <kind> (N)` sections of docs/reference/tf24-api.md. Each kind
has its rule below (RULES, ALIASES, TAPE_RULES): a layer is a `class X : public Layer` in
weft/nn/*.h, a tf.data name a public member of `class Dataset` or a function returning Dataset
under weft/data/, a numpy name a declaration in namespace weft::np, and so on. Comments and
string literals are removed before the headers are read, so documentation never counts.

CI: CTest `api_coverage` runs `api_coverage.py --check --lib $<TARGET_FILE:weft>` and CTest
`api_coverage_detects_gaps` runs `api_coverage.py --self-test` (tests/CMakeLists.txt), in the
release and ASan phases of scripts/run-tests.
"""
import argparse
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = "docs/reference/tf24-api.md"

# Listed names weft does not have yet, by kind (the short names of the tables). --check fails
# when one of them becomes covered, so that this list cannot go stale: remove the name here and
# run `scripts/api_coverage.py --write`.
EXPECTED_GAPS = {
}

# (kind, section of the reference, row of docs/training.md's table or None)
KINDS = [
    ("layers", "tf.keras.layers", "Layers"),
    ("losses", "tf.keras.losses", "Losses"),
    ("metrics", "tf.keras.metrics", "Metrics"),
    ("optimizers", "tf.keras.optimizers", "Optimizers"),
    ("callbacks", "tf.keras.callbacks", "Callbacks"),
    ("tf.data", "tf.data", "tf.data"),
    ("tape", "tf.GradientTape features", "GradientTape features"),
    ("numpy", "tf.experimental.numpy", None),
]

# Class-based kinds: (header globs, base class a listed class derives from). Names found that
# the reference does not list go to the table's "Also in weft" column.
RULES = {
    "layers": (["weft/nn/*.h"], r"Layer"),
    "losses": (["weft/nn/losses.h"], r"Loss"),
    "metrics": (["weft/nn/metrics.h"], r"Metric"),
    "optimizers": (["weft/optim/*.h"], r"Optimizer"),
    "callbacks": (["weft/train/callbacks.h", "weft/nn/callback.h"], r"Callback"),
}
NOT_COUNTED = {"layers": {"Model"}}  # a Layer by inheritance, but tf.keras.Model, not a layer
DATA_GLOBS = ["weft/data/*.h", "weft/data/**/*.h"]
NUMPY_GLOBS = ["weft/np/*.h"]
# The names of tf.experimental.numpy's random module, which weft has in weft::np::random.
RANDOM = {"poisson", "rand", "randint", "randn", "random", "seed", "standard_normal", "uniform"}

# Listed names that weft spells differently: short name -> the weft names that must all exist.
ALIASES = {
    "layers": {"Input / InputLayer": ["Input"]},  # KerasTensor Input(...) in weft/nn/layer.h
    "tf.data": {
        "TFRecordDataset": ["tfrecord_dataset"],
        "TextLineDataset": ["text_line_dataset"],
        "FixedLengthRecordDataset": ["fixed_length_record_dataset"],
        "CsvDataset / make_csv_dataset": ["read_csv_dataset"],
        "AUTOTUNE": ["kAutotune"],
        "options / with_options": ["options", "with_options"],
        "iteration": ["begin"],
        "iterator checkpointing": ["Iterator::save_state", "Iterator::restore_state"],
        "save / load": ["save", "load"],
    },
}

# GradientTape features: short name -> (file glob, regex on the code without comments). A test
# is the evidence for a behaviour that has no declaration of its own.
TAPE_H = "weft/autodiff/tape.h"
TAPE_RULES = {
    "watch": (TAPE_H, r"\bvoid\s+watch\s*\("),
    "gradient": (TAPE_H, r"\bTensor\s+gradient\s*\("),
    "persistent=True": (TAPE_H, r"\bGradientTape\s*\(\s*bool\s+persistent\b"),
    "watch_accessed_variables":
        (TAPE_H, r"\bGradientTape\s*\([^)]*\bbool\s+watch_accessed_variables\b"),
    "nested tapes": ("weft/autodiff/*_test.cc", r"\bTEST\s*\(\s*GradientTape\s*,\s*NestedTapes"),
    "stop_recording": (TAPE_H, r"\bstop_recording\s*\("),
    "reset": (TAPE_H, r"\bvoid\s+reset\s*\("),
    "output_gradients": (TAPE_H, r"\bconst\s+Tensor\s*&\s*output_gradient\b"),
    "unconnected_gradients": (TAPE_H, r"\benum\s+class\s+UnconnectedGradients\b"),
    "stop_gradient": (TAPE_H, r"\bTensor\s+stop_gradient\s*\("),
    "custom_gradient": ("weft/autodiff/*.h", r"\bcustom_gradient\s*\("),
    "jacobian": (TAPE_H, r"\bTensor\s+jacobian\s*\("),
    "batch_jacobian": (TAPE_H, r"\bTensor\s+batch_jacobian\s*\("),
    "watched_variables": (TAPE_H, r"\bwatched_variables\s*\(\s*\)"),
    "list / nested targets in gradient()":
        (TAPE_H, r"\bgradient\s*\(\s*const\s+std::vector<Tensor>\s*&\s*targets\b"),
    "ForwardAccumulator": ("weft/autodiff/*.h", r"\bclass\s+ForwardAccumulator\b(?!\s*;)"),
}

TRAINING_MD, NUMPY_MD, README_MD = "docs/training.md", "docs/numpy.md", "README.md"
API_BEGIN, API_END = "<!-- api-coverage:begin -->", "<!-- api-coverage:end -->"
NP_BEGIN, NP_END = "<!-- np-coverage:begin -->", "<!-- np-coverage:end -->"
README_COUNT = re.compile(r"\d+ of the \d+ functions of TF 2\.4's `tf\.experimental\.numpy`")
SELF = "scripts/api_coverage.py"


# ---- the reference lists ------------------------------------------------------------------------

def short_name(item):
    """The name a table shows: no trailing note in parentheses, no tf./experimental. prefix."""
    item = re.sub(r" \(.*\)$", "", item)
    return re.sub(r"^(tf\.autodiff\.|tf\.|experimental\.|preprocessing\.)", "", item)


def reference_lists(root):
    """{section: [(short name, needs complex numbers)]}, each checked against its (N)."""
    text = open(os.path.join(root, REFERENCE)).read()
    lists = {}
    for m in re.finditer(r"^## ([^\n]+) \((\d+)\)\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        items = [i.strip() for i in m.group(3).replace("\n", " ").split(",") if i.strip()]
        if len(items) != int(m.group(2)):
            raise SystemExit(f"{REFERENCE}: section '{m.group(1)}' says {m.group(2)} names but "
                             f"lists {len(items)}")
        lists[m.group(1)] = [(short_name(i), i.endswith(" (c)")) for i in items]
    return lists


# ---- reading the headers ------------------------------------------------------------------------

def strip_code(text):
    """Comments, string and character literals and preprocessor lines blanked (lines kept)."""
    def blank(m):
        s = m.group(0)
        if s[0] in "\"'":
            return s[0] * 2
        return re.sub(r"[^\n]", " ", s)
    text = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", blank, text,
                  flags=re.S)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", blank, text, flags=re.M)


class Decl:
    """One declaration at namespace or class scope: a class, function, variable or enum."""

    def __init__(self, path, line, scope, access, kind, name, text, inline=False, bases="",
                 start=0, end=0):
        self.path, self.line, self.scope, self.access = path, line, scope, access
        self.kind, self.name, self.text, self.inline, self.bases = kind, name, text, inline, bases
        self.start, self.end = start, end

    @property
    def qualified(self):
        return "::".join(self.scope + (self.name,))

    def where(self):
        return f"{self.path}:{self.line}"


def _without_templates(s):
    s = re.sub(r"\boperator\s*(<<=?|>>=?|<=>|<=|>=|->\*?|<|>)", "operator_", s)
    s = s.replace("->", " ")
    while True:
        t = re.sub(r"<[^<>]*>", "", s)
        if t == s:
            return s
        s = t


def _classify(head):
    """(kind, name, is a template) of a statement at namespace or class scope, or None."""
    head = " ".join(head.split())
    template = head.startswith("template")
    s = _without_templates(head).strip()
    s = re.sub(r"^template\s*", "", s)
    if not s or re.match(r"(using|typedef|friend|static_assert|namespace)\b", s):
        return None
    if re.fullmatch(r"(class|struct|union|enum)\b[^(]*", s) and "{" not in s and "=" not in s:
        return None  # a forward declaration
    paren, equals = s.find("("), s.find("=")
    if paren >= 0 and (equals < 0 or paren < equals):
        m = re.search(r"(~?\w+)\s*$", s[:paren])
        return ("function", m.group(1), template) if m else None
    m = re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*$", s if equals < 0 else s[:equals])
    return ("variable", m.group(1), template) if m else None


def _matching_brace(text, i):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def scan_header(root, rel):
    """Every declaration of a header at namespace or class scope, with its scope and access.

    Function bodies and braced initialisers are skipped; class bodies are read, their members
    getting the class in their scope (so a nested class's members are not the outer class's).
    """
    text = strip_code(open(os.path.join(root, rel)).read())
    decls = []
    stack = []  # [kind, names, access]: kind "namespace" or "class"
    start, depth, i = 0, 0, 0

    def scope():
        return tuple(n for entry in stack for n in entry[1])

    def access():
        return stack[-1][2] if stack and stack[-1][0] == "class" else None

    def add(kind, name, head, inline, bases="", end=None):
        offset = start + len(text[start:]) - len(text[start:].lstrip())
        line = text.count("\n", 0, offset) + 1
        decls.append(Decl(rel, line, scope(), access(), kind, name, " ".join(head.split()),
                          inline, bases, offset, i if end is None else end))

    while i < len(text):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{":
            close = _matching_brace(text, i)
            head = " ".join(text[start:i].split())
            if depth > 0:  # a braced initialiser in an argument list
                i = close + 1
                continue
            ns = re.fullmatch(r"(?:inline\s+)?namespace\s*([\w:]*)|extern\s*\"\"", head)
            cls = re.fullmatch(r"(?:template\s*<.*>\s*)?(class|struct|union)\s+(?:\[\[.*?\]\]\s*)?"
                               r"(\w+)(?:\s+final)?\s*(?::\s*(.*))?", head)
            enum = re.fullmatch(r"enum\s+(?:class\s+|struct\s+)?(\w+).*", head)
            if ns:
                stack.append(["namespace", [n for n in (ns.group(1) or "").split("::") if n],
                              None])
                start = i + 1
            elif cls:
                add("class", cls.group(2), head, False, cls.group(3) or "", close)
                stack.append(["class", [cls.group(2)],
                              "private" if cls.group(1) == "class" else "public"])
                start = i + 1
            else:
                found = _classify(head)
                if enum:
                    add("enum", enum.group(1), head, True, end=close)
                    start = close + 1
                elif found and found[0] == "function":
                    add("function", found[1], head, True, end=close)
                    start = close + 1
                # else a braced initialiser: the statement goes on to its ';'
                i = close + 1
                continue
        elif c == "}":
            if stack:
                stack.pop()
            start = i + 1
        elif c == ";" and depth == 0:
            head = text[start:i]
            found = _classify(head)
            if found:
                kind, name, template = found
                inline = template or bool(
                    re.search(r"\b(inline|constexpr)\b|=\s*(default|delete|0)\s*$", head.strip()))
                add(kind, name, head, inline)
            start = i + 1
        elif c == ":" and stack and stack[-1][0] == "class":
            spec = re.fullmatch(r"\s*(public|private|protected)\s*:", text[start:i + 1])
            if spec:
                stack[-1][2] = spec.group(1)
                start = i + 1
        i += 1
    return decls


def files(root, patterns):
    out = []
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            rel = os.path.relpath(path, root)
            if rel not in out:
                out.append(rel)
    return out


# ---- what weft has, per kind --------------------------------------------------------------------

def found_classes(root, kind):
    """{class name: Decl} of the classes deriving from the kind's base in its headers."""
    patterns, base = RULES[kind]
    found = {}
    for rel in files(root, patterns):
        for d in scan_header(root, rel):
            if d.kind == "class" and re.search(rf"(^|,)\s*(public\s+)?(\w+::)*{base}\s*(,|$)",
                                                d.bases):
                found.setdefault(d.name, d)
            elif kind == "callbacks" and d.kind == "class" and d.name == "History":
                found.setdefault(d.name, d)  # what fit returns; no base class
            elif (kind == "layers" and d.kind == "function" and d.name == "Input"
                  and d.text.startswith("KerasTensor ") and d.access is None):
                found.setdefault(d.name, d)
    for name in NOT_COUNTED.get(kind, ()):
        found.pop(name, None)
    return found


def found_data(root):
    """{name: Decl}: public members of Dataset ("Iterator::x" for its Iterator's) and the
    functions returning a Dataset at namespace scope under weft/data/."""
    found = {}
    for rel in files(root, DATA_GLOBS):
        for d in scan_header(root, rel):
            if d.kind not in ("function", "variable"):
                continue
            if d.scope[-1:] == ("Dataset",) and d.access == "public":
                found.setdefault(d.name, d)
            elif d.scope[-2:] == ("Dataset", "Iterator") and d.access == "public":
                found.setdefault(f"Iterator::{d.name}", d)
            elif (d.access is None and d.kind == "function"
                  and re.match(r"((static|inline)\s+)*Dataset\s+\w+\s*\(", d.text)):
                found.setdefault(d.name, d)
    return found


def found_numpy(root):
    """{name or "random::name": Decl} of declarations at namespace scope in weft::np."""
    found = {}
    for rel in files(root, NUMPY_GLOBS):
        for d in scan_header(root, rel):
            if d.access is None and d.kind in ("function", "class"):
                if d.scope == ("weft", "np"):
                    found.setdefault(d.name, d)
                elif d.scope == ("weft", "np", "random"):
                    found.setdefault(f"random::{d.name}", d)
    return found


def found_tape(root):
    """{feature: (file:line, Decl or None)} for each GradientTape feature whose rule matches."""
    found = {}
    for feature, (pattern, regex) in TAPE_RULES.items():
        for rel in files(root, [pattern]):
            text = strip_code(open(os.path.join(root, rel)).read())
            m = re.search(regex, text)
            if m:
                line = text.count("\n", 0, m.start()) + 1
                decl = None
                if rel.endswith(".h"):
                    for d in scan_header(root, rel):
                        if d.start <= m.start() <= d.end and d.kind in ("function", "class"):
                            decl = d
                found[feature] = (f"{rel}:{line}", decl)
                break
    return found


class Row:
    """One kind: per listed name whether it is covered and by which declarations."""

    def __init__(self, kind, section, label, items, covered, evidence, extras):
        self.kind, self.section, self.label, self.items = kind, section, label, items
        self.covered, self.evidence, self.extras = covered, evidence, extras

    def count(self):
        return sum(1 for name, _ in self.items if self.covered[name])

    def missing(self):
        return [name for name, complex_only in self.items
                if not self.covered[name] and not complex_only]


def measure(root):
    lists = reference_lists(root)
    unknown = set(lists) - {section for _, section, _ in KINDS}
    if unknown:
        raise SystemExit(f"{REFERENCE}: no rule for the section(s) {sorted(unknown)}: add one "
                         f"to KINDS in {SELF}")
    rows = []
    for kind, section, label in KINDS:
        if section not in lists:
            raise SystemExit(f"{REFERENCE}: no section '## {section} (N)', which {SELF} reads")
        items = lists[section]
        covered, evidence = {}, {}
        if kind == "tape":
            found = found_tape(root)
            for name, _ in items:
                if name not in TAPE_RULES:
                    raise SystemExit(f"{REFERENCE}: no rule for the tape feature '{name}': add "
                                     f"one to TAPE_RULES in {SELF}")
                covered[name] = name in found
                evidence[name] = [found[name][1]] if name in found and found[name][1] else []
            rows.append(Row(kind, section, label, items, covered, evidence, []))
            continue
        if kind == "tf.data":
            found = found_data(root)
        elif kind == "numpy":
            found = found_numpy(root)
        else:
            found = found_classes(root, kind)
        used = set()
        for name, _ in items:
            spelled = ALIASES.get(kind, {}).get(name, [name])
            if kind == "numpy" and name in RANDOM:
                spelled = [f"random::{name}"]
            used.update(spelled)
            covered[name] = all(s in found for s in spelled)
            evidence[name] = [found[s] for s in spelled if s in found]
        extras = sorted(set(found) - used) if kind in RULES else []
        rows.append(Row(kind, section, label, items, covered, evidence, extras))
    return rows


# ---- the generated text -------------------------------------------------------------------------

def training_table(rows):
    lines = ["Generated from weft's headers by `scripts/api_coverage.py`; CTest `api_coverage` "
             "fails when it", "is out of date.", "",
             "| Kind | Covered | Not yet | Also in weft |", "|---|---|---|---|"]
    for r in rows:
        if r.label:
            cells = [r.label, f"{r.count()} of {len(r.items)}", ", ".join(r.missing()),
                     ", ".join(r.extras)]
            lines.append("|" + "|".join(f" {c} " if c else " " for c in cells) + "|")
    return "\n".join(lines)


def numpy_table(row):
    complex_count = sum(1 for _, c in row.items if c)
    lines = [f"weft::np covers **{row.count()} of {len(row.items)}** functions of TF 2.4's "
             f"`tf.experimental.numpy` ({complex_count} need complex numbers, which weft does not "
             f"have). Generated by `scripts/api_coverage.py` from weft's headers.", "",
             "| function | weft::np |", "|---|---|"]
    for name, complex_only in row.items:
        spelled = f"np::random::{name}" if name in RANDOM else f"np::{name}"
        status = ("complex only" if complex_only
                  else f"`{spelled}`" if row.covered[name] else "not yet")
        lines.append(f"| {name} | {status} |")
    return "\n".join(lines)


def readme_count(row):
    return f"{row.count()} of the {len(row.items)} functions of TF 2.4's `tf.experimental.numpy`"


def generated_doc(root, rel, rows):
    """(current text, generated text) of one of the docs; SystemExit naming a missing marker."""
    numpy_row = next(r for r in rows if r.kind == "numpy")
    text = open(os.path.join(root, rel)).read()
    if rel == README_MD:
        if len(README_COUNT.findall(text)) != 1:
            raise SystemExit(f"{README_MD}: needs one '<N> of the <M> functions of TF 2.4's "
                             f"`tf.experimental.numpy`' for the count")
        return text, README_COUNT.sub(readme_count(numpy_row), text)
    begin, end, body = ((API_BEGIN, API_END, training_table(rows)) if rel == TRAINING_MD
                        else (NP_BEGIN, NP_END, numpy_table(numpy_row)))
    if text.count(begin) != 1 or text.count(end) != 1:
        raise SystemExit(f"{rel}: needs one {begin} ... {end} block for the coverage table")
    head, rest = text.split(begin, 1)
    return text, f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}"


# ---- checks -------------------------------------------------------------------------------------

def gap_problems(rows):
    problems = []
    for r in rows:
        gaps = EXPECTED_GAPS.get(r.kind, [])
        names = {name for name, _ in r.items}
        for name in gaps:
            if name not in names:
                problems.append(f"{r.kind}: EXPECTED_GAPS names {name}, which {REFERENCE} does not "
                                f"list under '{r.section}': fix or remove it in {SELF}")
            elif r.covered[name]:
                problems.append(f"{r.kind}: {name} is now covered: remove it from "
                                f"EXPECTED_GAPS['{r.kind}'] in {SELF} and run {SELF} --write")
        for name in r.missing():
            if name not in gaps:
                problems.append(f"{r.kind}: {name} is listed in {REFERENCE} but not covered "
                                f"({where(r.kind, name)}). If it was removed or renamed, restore "
                                f"it; if it is a known gap, add it to EXPECTED_GAPS['{r.kind}'] "
                                f"in {SELF} and run {SELF} --write")
    return problems


def where(kind, name):
    spelled = ALIASES.get(kind, {}).get(name, [name])
    if kind == "tape":
        return f"no match of {TAPE_RULES[name][1]!r} in {TAPE_RULES[name][0]}"
    if kind == "tf.data":
        return f"no public Dataset member or Dataset-returning function {' + '.join(spelled)} " \
               f"in weft/data/"
    if kind == "numpy":
        return f"no {'weft::np::random' if name in RANDOM else 'weft::np'}::{name} in weft/np/"
    patterns, base = RULES[kind]
    return f"no class {' + '.join(spelled)} : public {base} in {', '.join(patterns)}"


def library_symbols(lib):
    """The names the library defines: functions without their parameters, and classes with a
    vtable or typeinfo, as `nm -DC --defined-only` prints them."""
    out = subprocess.run(["nm", "-DC", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split(" ", 2)
        if len(fields) < 3:
            continue
        symbol = re.sub(r"\[abi:\w+\]", "", fields[2])
        m = re.match(r"(?:vtable|typeinfo|typeinfo name) for (.*)$", symbol)
        if m:
            names.add(m.group(1))
        elif "(" in symbol:
            names.add(symbol.split("(", 1)[0])
    return names


def library_problems(root, rows, lib):
    """A counted function or class that a header declares but the library does not define.

    A function counts when one of its out-of-line overloads is defined; a class when one of its
    out-of-line constructors is (or any out-of-line member, or nothing to check if all are
    inline, as for History).
    """
    symbols = library_symbols(lib)
    members = {}  # class qualified name -> its out-of-line member functions
    headers = {d.path for r in rows for ds in r.evidence.values() for d in ds}
    for rel in headers:
        for d in scan_header(root, rel):
            if d.kind == "function" and not d.inline and d.access is not None:
                members.setdefault("::".join(d.scope), []).append(d)
    problems, seen = [], set()
    for r in rows:
        for name, _ in r.items:
            for d in r.evidence[name]:
                if d.qualified in seen:
                    continue
                seen.add(d.qualified)
                if d.kind == "function" and not d.inline:
                    if d.qualified not in symbols:
                        problems.append(f"{r.kind}: {name}: {d.qualified} is declared at "
                                        f"{d.where()} but {lib} does not define it")
                elif d.kind == "class":
                    own = members.get(d.qualified, [])
                    ctors = [m for m in own if m.name == d.name] or own
                    if ctors and not any(m.qualified in symbols for m in ctors):
                        problems.append(f"{r.kind}: {name}: class {d.qualified} ({d.where()}) "
                                        f"has none of its out-of-line {ctors[0].name}(...) "
                                        f"defined in {lib}")
    return problems


def self_test():
    """--check on copies of the tree: a renamed layer class, and an expected gap filled."""
    rows = measure(ROOT)
    layers = next(r for r in rows if r.kind == "layers")
    victim = next(name for name, _ in layers.items
                  if layers.covered[name] and name not in ALIASES["layers"])
    decl = layers.evidence[victim][0]
    cases = [(decl.path, rf"\bclass\s+{victim}\b", f"class {victim}Renamed",
              f"layers: {victim} is listed in")]
    if EXPECTED_GAPS.get("layers"):
        gap = EXPECTED_GAPS["layers"][0]
        cases.append(("weft/nn/core_layers.h", r"\Z",
                      f"\nnamespace weft::nn {{\nclass {gap} : public Layer {{}};\n}}\n",
                      f"layers: {gap} is now covered"))
    failures = 0
    for rel, pattern, replacement, expected in cases:
        with tempfile.TemporaryDirectory() as tmp:
            for path in files(ROOT, ["weft/**/*.h", "weft/autodiff/*_test.cc", REFERENCE,
                                     TRAINING_MD, NUMPY_MD, README_MD]):
                os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
                shutil.copy(os.path.join(ROOT, path), os.path.join(tmp, path))
            target = os.path.join(tmp, rel)
            text = open(target).read()
            changed = re.sub(pattern, replacement.replace("\\", r"\\"), text, count=1)
            assert changed != text, f"{rel}: {pattern!r} not found"
            open(target, "w").write(changed)
            run = subprocess.run([sys.executable, os.path.abspath(__file__), "--check", "--root",
                                  tmp], capture_output=True, text=True)
        ok = run.returncode == 1 and expected in run.stdout
        failures += not ok
        print(f"{'ok' if ok else 'FAILED'}: {rel} edited ({replacement.strip()!r}): --check "
              f"exited {run.returncode}, expected 1 with '{expected}'")
        if not ok:
            print(run.stdout + run.stderr)
    return 1 if failures else 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the generated doc parts")
    mode.add_argument("--check", action="store_true", help="exit 1 on a problem (see above)")
    mode.add_argument("--self-test", action="store_true", help="prove --check detects gaps")
    parser.add_argument("--lib", help="the built weft library, for the nm cross-check")
    parser.add_argument("--root", default=ROOT, help="the tree to measure (default: this one)")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    rows = measure(root)
    summary = [f"{r.kind}: {r.count()} of {len(r.items)}" for r in rows]
    problems = library_problems(root, rows, args.lib) if args.lib else []
    if args.write:
        for rel in (TRAINING_MD, NUMPY_MD, README_MD):
            old, new = generated_doc(root, rel, rows)  # read just before writing
            if old != new:
                with open(os.path.join(root, rel), "w") as f:
                    f.write(new)
                print(f"wrote {rel}")
    elif args.check:
        problems = gap_problems(rows) + problems
        for rel in (TRAINING_MD, NUMPY_MD, README_MD):
            old, new = generated_doc(root, rel, rows)
            if old != new:
                problems.append(f"{rel}: the generated coverage is out of date: run {SELF} --write")
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True), rel, f"{rel} (generated)"))
    else:
        numpy_row = next(r for r in rows if r.kind == "numpy")
        print(training_table(rows) + "\n\n" + numpy_table(numpy_row) + "\n")
    for p in problems:
        print(p)
    print(", ".join(summary) + f"; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
