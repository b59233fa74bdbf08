"""C source of an SX function, split into pieces the C compiler handles quickly.

CasADi's own code generator writes an SX function as one straight-line C function. Compilers
spend time superlinear in a function's size (register allocation, scheduling): a 70k-operation
kernel takes about a minute at ``-O1``. Here the same instruction list (``Function.instruction_id``,
``instruction_input``, ``instruction_output``, ``instruction_constant``) is written as a sequence of
**parts**, each a C function of at most ``part_ops`` operations, spread over several C files that
compile in parallel and link into one shared library. The library has the interface of CasADi's
generated code (``name``, ``name_n_in``, ``name_sparsity_in``, ``name_work``, ...), so
``casadi.external`` loads it like any other.

Exactness. Every instruction becomes the same C expression CasADi's generator writes for it (same
operation, same operand order, constants written exactly), evaluated in the same order, so the
results are those of CasADi's generated code bit for bit (and of its SX virtual machine, which
calls the same C library functions).

Values. Each instruction's result is a ``const`` local of its part. A result used by a later part
is also stored in the work vector ``w`` (slots reused once no later part reads them) and read back
there; inputs and constants are re-read or re-written where used instead. Missing input pointers
read zeros and missing output pointers write to a scratch area, as in CasADi's code.

Structural zeros. An output entry that is the constant ``+0.0`` (a dense output's structural zero:
the inertia matrix's entries between bodies on different branches, 762 of Talos' 1,444) is
**never written**: its value is the same at every call, so the output buffer holds it from the
moment it is made (``np.zeros``; every buffer wbc hands a kernel starts zeroed, and a caller's
``out=`` array is cleared before the call). :func:`zero_outputs` lists these entries.

Glossary: *part* a C function of the split code; *slot* an entry of the work vector.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import casadi as ca

__all__ = [
    "SplitSource",
    "SplitPlan",
    "zero_outputs",
    "Unsupported",
    "split_source",
    "writer_digest",
    "DEFAULT_PART_OPS",
    "PARTS_PER_FILE",
]

#: Operations per part, chosen by measurement on the Talos balance kernel (68k operations, gcc 12):
#: compiler time (all files, one processor) 5.1 s at 250 operations per part, 4.7 s at 500, 4.8 s
#: at 1000, 5.7 s at 2000, ~60 s for CasADi's single function; the run time is the same within
#: noise for 250-1000 (and 0.85-0.9 x the single function's).
DEFAULT_PART_OPS = 500

#: Parts per C file: the files compile in parallel; a fixed number (not the processor count) keeps
#: the generated source, hence the cache key, the same on every machine. Talos (136 parts), compiler
#: time at -Og: 3.5 s with 4 parts per file, 3.2 s with 8, 3.1 s with 17 (fewer compiler starts,
#: but fewer files to share among processors).
PARTS_PER_FILE = 8


class Unsupported(Exception):
    """The function holds an instruction this writer does not handle (the caller falls back to
    CasADi's own code generator)."""


# Operation code -> C expression of its operands x, y (as CasADi's generator writes them).
_BINARY = {
    ca.OP_ADD: "({x}+{y})",
    ca.OP_SUB: "({x}-{y})",
    ca.OP_MUL: "({x}*{y})",
    ca.OP_DIV: "({x}/{y})",
    ca.OP_POW: "pow({x},{y})",
    ca.OP_CONSTPOW: "pow({x},{y})",
    ca.OP_LT: "({x}<{y})",
    ca.OP_LE: "({x}<={y})",
    ca.OP_EQ: "({x}=={y})",
    ca.OP_NE: "({x}!={y})",
    ca.OP_AND: "({x}&&{y})",
    ca.OP_OR: "({x}||{y})",
    ca.OP_IF_ELSE_ZERO: "({x}?{y}:0)",
    ca.OP_FMIN: "fmin({x},{y})",
    ca.OP_FMAX: "fmax({x},{y})",
    ca.OP_ATAN2: "atan2({x},{y})",
    ca.OP_FMOD: "fmod({x},{y})",
    ca.OP_COPYSIGN: "copysign({x},{y})",
    ca.OP_HYPOT: "hypot({x},{y})",
    ca.OP_REMAINDER: "remainder({x},{y})",
}
_UNARY = {
    ca.OP_ASSIGN: "{x}",
    ca.OP_NEG: "(-{x})",
    ca.OP_SQ: "wbc_sq({x})",
    ca.OP_TWICE: "(2.*{x})",
    ca.OP_INV: "(1./{x})",
    ca.OP_NOT: "(!{x})",
    ca.OP_FABS: "fabs({x})",
    ca.OP_SIGN: "wbc_sign({x})",
    ca.OP_SQRT: "sqrt({x})",
    ca.OP_EXP: "exp({x})",
    ca.OP_LOG: "log({x})",
    ca.OP_SIN: "sin({x})",
    ca.OP_COS: "cos({x})",
    ca.OP_TAN: "tan({x})",
    ca.OP_ASIN: "asin({x})",
    ca.OP_ACOS: "acos({x})",
    ca.OP_ATAN: "atan({x})",
    ca.OP_SINH: "sinh({x})",
    ca.OP_COSH: "cosh({x})",
    ca.OP_TANH: "tanh({x})",
    ca.OP_ASINH: "asinh({x})",
    ca.OP_ACOSH: "acosh({x})",
    ca.OP_ATANH: "atanh({x})",
    ca.OP_FLOOR: "floor({x})",
    ca.OP_CEIL: "ceil({x})",
    ca.OP_ERF: "erf({x})",
    ca.OP_LOG1P: "log1p({x})",
    ca.OP_EXPM1: "expm1({x})",
}

_PART_ARGS = "const casadi_real* const* arg, casadi_real* const* res, casadi_real* w"

_HEADER = """/* generated by wbc.codegen.emit: do not edit */
#include <math.h>
#include <string.h>
typedef double casadi_real;
typedef long long int casadi_int;
#define WBC_HIDDEN __attribute__((visibility("hidden")))
static inline casadi_real wbc_sq(casadi_real x) { return x*x; }
static inline casadi_real wbc_sign(casadi_real x) { return x<0 ? -1 : x>0 ? 1 : x; }
"""


@dataclasses.dataclass(frozen=True)
class SplitSource:
    """The C files of one function.

    Attributes:
        name: the exported function name.
        files: ``(file name, C text)``; the first holds the exported interface.
        parts: number of part functions.
        slots: work-vector entries that carry values between parts.
    """

    name: str
    files: tuple[tuple[str, str], ...]
    parts: int
    slots: int

    def text(self) -> str:
        """All files, concatenated with their names (what the cache key hashes)."""
        return "".join(f"/* file {name} */\n{text}" for name, text in self.files)


def _literal(value: float) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = repr(float(value))  # shortest text that reads back as exactly this double
    return f"({text})" if text.startswith("-") else text


_digest: list[str] = []  # this module's source digest, computed once


def writer_digest() -> str:
    """SHA-256 of this writer's source: part of the cache key, so a change in the writer builds anew."""
    if not _digest:
        _digest.append(hashlib.sha256(Path(__file__).read_bytes()).hexdigest())
    return _digest[0]


def split_source(
    function: ca.Function, part_ops: int = DEFAULT_PART_OPS, parts_per_file: int = PARTS_PER_FILE
) -> SplitSource:
    """The C source of the SX function ``function`` as parts of at most ``part_ops`` operations
    with ``parts_per_file`` parts in each C file.

    Raises:
        Unsupported: ``function`` is not an SX function, or holds an instruction other than the
            scalar operations, inputs, outputs and constants.
    """
    plan = SplitPlan(function, part_ops, parts_per_file)
    return SplitSource(function.name(), tuple(plan.files()), plan.parts, plan.slots)


class SplitPlan:
    """The analysis behind :func:`split_source` (values, parts, work slots); :meth:`files` then
    writes the C files one at a time (so that compiling the first ones can start meanwhile).

    Attributes:
        parts: number of part functions.
        slots: work-vector entries that carry values between parts.

    Raises:
        Unsupported: as :func:`split_source` (from the constructor).
    """

    def __init__(
        self, function: ca.Function, part_ops: int = DEFAULT_PART_OPS, parts_per_file: int = PARTS_PER_FILE
    ) -> None:
        if not function.is_a("SXFunction"):
            raise Unsupported(f"{function.name()} is not an SX function")
        name = function.name()
        for text in [name, *function.name_in(), *function.name_out()]:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):  # sanitized by trace; never quote others
                raise Unsupported(f"{text!r} is not a C identifier")
        n = function.n_instructions()
        op_of = [function.instruction_id(k) for k in range(n)]
        # SSA: each instruction k defines value k; the work slots CasADi reuses are renamed away
        operands: list[tuple[int, ...]] = [()] * n
        where: list[tuple[int, ...]] = [()] * n  # OP_INPUT: (input, nonzero); OP_OUTPUT: (output, nonzero)
        constant: dict[int, float] = {}
        current: dict[int, int] = {}  # CasADi work slot -> value holding it
        for k in range(n):
            op = op_of[k]
            if op == ca.OP_INPUT:
                where[k] = tuple(function.instruction_input(k))
                current[function.instruction_output(k)[0]] = k
            elif op == ca.OP_OUTPUT:
                operands[k] = (current[function.instruction_input(k)[0]],)
                where[k] = tuple(function.instruction_output(k))
            elif op == ca.OP_CONST:
                constant[k] = function.instruction_constant(k)
                current[function.instruction_output(k)[0]] = k
            elif op in _BINARY or op in _UNARY:
                arity = 2 if op in _BINARY else 1
                inputs = function.instruction_input(k)
                if len(inputs) < arity:
                    raise Unsupported(f"{name}: instruction {k} (operation {op}) has {len(inputs)} operands")
                operands[k] = tuple(current[s] for s in inputs[:arity])
                current[function.instruction_output(k)[0]] = k
            else:
                raise Unsupported(f"{name}: instruction {k} has operation {op}, which wbc's C writer does not handle")

        # parts: consecutive runs of part_ops instructions (the list is in evaluation order)
        part_ops = max(1, int(part_ops))
        part_of = [k // part_ops for k in range(n)]
        n_parts = max(1, -(-n // part_ops))
        # the last part reading each computed value (inputs and constants are re-read where used)
        last_use: dict[int, int] = {}
        for k in range(n):
            for v in operands[k]:
                if op_of[v] not in (ca.OP_INPUT, ca.OP_CONST) and part_of[v] != part_of[k]:
                    last_use[v] = max(last_use.get(v, -1), part_of[k])
        # work slots: taken by a value in its defining part, free again after its last reader
        slot: dict[int, int] = {}
        free: list[int] = []
        n_slots = 0
        releases: dict[int, list[int]] = {}
        for p in range(n_parts):
            for k in range(p * part_ops, min(n, (p + 1) * part_ops)):
                if k in last_use:
                    if free:
                        slot[k] = free.pop()
                    else:
                        slot[k] = n_slots
                        n_slots += 1
                    releases.setdefault(last_use[k], []).append(k)
            free.extend(slot[k] for k in releases.pop(p, []))

        self.function, self.name, self.n, self.part_ops = function, name, n, part_ops
        self.op_of, self.operands, self.where, self.constant = op_of, operands, where, constant
        self.part_of, self.slot, self.parts, self.slots = part_of, slot, n_parts, n_slots
        self.parts_per_file = parts_per_file

    def files(self) -> Iterator[tuple[str, str]]:
        """``(file name, C text)`` of each file, in order; the first holds the exported interface."""
        function, name, n, part_ops = self.function, self.name, self.n, self.part_ops
        op_of, operands, where, constant = self.op_of, self.operands, self.where, self.constant
        part_of, slot, n_parts, n_slots = self.part_of, self.slot, self.parts, self.slots
        parts_per_file = self.parts_per_file

        def render(p: int) -> str:
            lines = [f"WBC_HIDDEN void {name}_part{p}({_PART_ARGS}) {{"]
            loaded: set[int] = set()

            def use(v: int) -> str:
                op = op_of[v]
                if op == ca.OP_CONST:
                    return _literal(constant[v])
                if part_of[v] != p and v not in loaded:
                    loaded.add(v)
                    source = f"arg[{where[v][0]}][{where[v][1]}]" if op == ca.OP_INPUT else f"w[{slot[v]}]"
                    lines.append(f"  const double v{v}={source};")
                return f"v{v}"

            for k in range(p * part_ops, min(n, (p + 1) * part_ops)):
                op = op_of[k]
                if op == ca.OP_CONST:
                    if k in slot:  # never: constants are not stored; kept for clarity
                        lines.append(f"  w[{slot[k]}]={_literal(constant[k])};")
                    continue
                if op == ca.OP_INPUT:
                    lines.append(f"  const double v{k}=arg[{where[k][0]}][{where[k][1]}];")
                    loaded.add(k)
                elif op == ca.OP_OUTPUT:
                    if not _is_plus_zero(op_of, constant, operands[k][0]):  # structural zeros: never written
                        lines.append(f"  res[{where[k][0]}][{where[k][1]}]={use(operands[k][0])};")
                    continue
                else:
                    args = [use(v) for v in operands[k]]
                    form = _BINARY.get(op) or _UNARY[op]
                    expr = form.format(x=args[0], y=args[1] if len(args) > 1 else "")
                    lines.append(f"  const double v{k}={expr};")
                if k in slot:
                    lines.append(f"  w[{slot[k]}]=v{k};")
            lines.append("}")
            return "\n".join(lines) + "\n"

        per = max(1, int(parts_per_file))
        groups = [list(range(start, min(n_parts, start + per))) for start in range(0, n_parts, per)]
        declarations = "".join(f"WBC_HIDDEN void {name}_part{p}({_PART_ARGS});\n" for p in range(n_parts))
        interface = _interface(function, n_parts, n_slots)
        for i, group in enumerate(groups):
            text = _HEADER + "".join(render(p) for p in group)
            if i == 0:
                text += declarations + interface
            yield f"{name}_{i}.c", text


def _is_plus_zero(op_of: Sequence[int], constant: dict[int, float], value: int) -> bool:
    """Whether ``value`` is the constant ``+0.0`` (not ``-0.0``: its bits differ)."""
    return op_of[value] == ca.OP_CONST and constant[value] == 0.0 and math.copysign(1.0, constant[value]) > 0


def zero_outputs(function: ca.Function) -> list[list[int]]:
    """Per output of the SX function ``function``, the nonzero indices (column-major positions of
    a dense output) that are the constant ``+0.0``: what the split writer never writes (see the
    module docstring). Empty lists for a function of another kind (CasADi's generator writes
    everything)."""
    found: list[list[int]] = [[] for _ in range(function.n_out())]
    if not function.is_a("SXFunction"):
        return found
    plus_zero: set[int] = set()  # CasADi work slots holding +0.0 now
    for k in range(function.n_instructions()):
        op = function.instruction_id(k)
        if op == ca.OP_OUTPUT:
            if function.instruction_input(k)[0] in plus_zero:
                output, nonzero = function.instruction_output(k)
                found[output].append(nonzero)
            continue
        written = function.instruction_output(k)
        if not written:
            continue
        value = function.instruction_constant(k) if op == ca.OP_CONST else None
        if value == 0.0 and math.copysign(1.0, value) > 0:
            plus_zero.add(written[0])
        else:
            plus_zero.discard(written[0])
    return found


def _sparsity(sp: ca.Sparsity) -> list[int]:
    return [sp.size1(), sp.size2(), *sp.colind(), *sp.row()]


def _interface(function: ca.Function, n_parts: int, n_slots: int) -> str:
    """The exported entry point and CasADi's external-function interface."""
    name = function.name()
    n_in, n_out = function.n_in(), function.n_out()
    max_in = max([function.nnz_in(i) for i in range(n_in)] + [1])
    max_out = max([function.nnz_out(i) for i in range(n_out)] + [1])
    sz_w = n_slots + max_in + max_out
    sparsities = [_sparsity(function.sparsity_in(i)) for i in range(n_in)]
    sparsities += [_sparsity(function.sparsity_out(i)) for i in range(n_out)]
    lines = []
    for i, sp in enumerate(sparsities):
        lines.append(f"static const casadi_int {name}_s{i}[{len(sp)}] = {{{', '.join(map(str, sp))}}};")
    zeros, scratch = n_slots, n_slots + max_in
    calls = "".join(f"  {name}_part{p}(a, r, w);\n" for p in range(n_parts))
    a_size, r_size = max(n_in, 1), max(n_out, 1)
    lines.append(f"""
int {name}(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem) {{
  const casadi_real* a[{a_size}];
  casadi_real* r[{r_size}];
  int i;
  (void)iw; (void)mem;
  memset(w + {zeros}, 0, {max_in}*sizeof(casadi_real));
  for (i = 0; i < {n_in}; ++i) a[i] = arg[i] ? arg[i] : w + {zeros};
  for (i = 0; i < {n_out}; ++i) r[i] = res[i] ? res[i] : w + {scratch};
{calls}  return 0;
}}
int {name}_checkout(void) {{ return 0; }}
void {name}_release(int mem) {{ (void)mem; }}
void {name}_incref(void) {{}}
void {name}_decref(void) {{}}
casadi_int {name}_n_in(void) {{ return {n_in}; }}
int {name}_casadi_int_size(void) {{ return sizeof(casadi_int); }}
int {name}_casadi_real_size(void) {{ return sizeof(casadi_real); }}
casadi_int {name}_n_out(void) {{ return {n_out}; }}
casadi_real {name}_default_in(casadi_int i) {{ (void)i; return 0; }}
const char* {name}_name_in(casadi_int i) {{
  switch (i) {{
{_cases([function.name_in(i) for i in range(n_in)])}    default: return 0;
  }}
}}
const char* {name}_name_out(casadi_int i) {{
  switch (i) {{
{_cases([function.name_out(i) for i in range(n_out)])}    default: return 0;
  }}
}}
const casadi_int* {name}_sparsity_in(casadi_int i) {{
  switch (i) {{
{"".join(f"    case {i}: return {name}_s{i};" + chr(10) for i in range(n_in))}    default: return 0;
  }}
}}
const casadi_int* {name}_sparsity_out(casadi_int i) {{
  switch (i) {{
{"".join(f"    case {i}: return {name}_s{n_in + i};" + chr(10) for i in range(n_out))}    default: return 0;
  }}
}}
int {name}_work(casadi_int *sz_arg, casadi_int* sz_res, casadi_int *sz_iw, casadi_int *sz_w) {{
  if (sz_arg) *sz_arg = {n_in};
  if (sz_res) *sz_res = {n_out};
  if (sz_iw) *sz_iw = 0;
  if (sz_w) *sz_w = {sz_w};
  return 0;
}}
""")
    return "\n".join(lines)


def _cases(names: Sequence[str]) -> str:
    out = []
    for i, text in enumerate(names):
        if not all(c.isalnum() or c == "_" for c in text):  # names are sanitized; never quote anything else
            raise Unsupported(f"input/output name {text!r} is not a C identifier")
        out.append(f'    case {i}: return "{text}";\n')
    return "".join(out)
