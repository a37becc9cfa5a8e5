"""Mutant schemata: every sampled mutant of a file compiled in at once.

Each mutant's range becomes `(FAULTLANE_MUTANT(id) ? (mutated) : (original))`
(the original with the switches of the mutants inside it; for the mutants
`watched` picks, the original inside FAULTLANE_WATCH), so one build
serves the whole sample and the environment picks the mutant a process runs
(FAULTLANE_MUTANT=id; none by default). The switch (switch.hpp) also records,
when FAULTLANE_MUTANT_TRACE names a folder, every switch a process reaches:
that is the coverage that decides which tests run for which mutant.

A mutated branch spelled over several lines is followed by a `#line`
directive, so the compiler's line numbers stay those of the source and an
error can be traced to the mutants whose lines it names (`prune`).
"""
import re

# How each operator's two branches are spelled around the range; the
# original's type decides: a condition is read as bool, a deleted call as
# void.
WRAP = {
    "call_deleted": ("{repl}", "static_cast<void>({orig})"),
    "not_added": ("{repl}", "static_cast<bool>({orig})"),
    "if_forced": ("{repl}", "static_cast<bool>({orig})"),
}
DEFAULT_WRAP = ("({repl})", "({orig})")


def line_of(raw, offset):
    return raw.count("\n", 0, offset) + 1


def _nodes(mutants):
    """Mutants grouped by range, outermost first: [(start, end, [mutants])]."""
    by_range = {}
    for m in mutants:
        by_range.setdefault((m.start, m.end), []).append(m)
    return sorted(((s, e, ms) for (s, e), ms in by_range.items()), key=lambda n: (n[0], -n[1]))


def render(text, mutants, switch_header):
    """The file with every mutant behind its switch. Ranges that overlap
    without nesting (a macro's doing) keep the first; the others are
    returned as dropped."""
    nodes = _nodes(mutants)
    dropped = []
    kept = []
    stack = []  # ends of the open ranges
    for s, e, ms in nodes:
        while stack and stack[-1] <= s:
            stack.pop()
        if stack and e > stack[-1]:
            dropped += ms
            continue
        kept.append((s, e, ms))
        stack.append(e)

    pos = 0
    # A mutant's code is not the authors': warnings (-Werror makes them
    # errors) say nothing about it, and the unmutated file compiles clean.
    out = [f'#include "{switch_header}"\n#pragma clang diagnostic ignored "-Weverything"\n'
           '#line 1\n']

    def emit_range(i, end_limit):
        """Renders nodes[i:] that start before end_limit; returns (text, next i)."""
        nonlocal pos
        parts = []
        while i < len(kept) and kept[i][0] < end_limit:
            s, e, ms = kept[i]
            parts.append(text[pos:s])
            pos = s
            inner, i = emit_range(i + 1, e)
            parts.append(inner)
            parts.append(text[pos:e])
            original = "".join(parts[-2:])
            del parts[-2:]
            pos = e
            parts.append(_switched(text, s, e, ms, original))
        return "".join(parts), i

    body, _ = emit_range(0, len(text) + 1)
    out.append(body)
    out.append(text[pos:])
    return "".join(out), dropped


def watched(m):
    """Whether the trace run records where the mutant infects (its value
    differs from the original's), so that only the tests it infects run
    for it: a forced condition, a comparison, a literal moved inside a
    comparison (its range is the comparison) and a && turned || (or back),
    each only when what it replaces has no side effects (sites.py marks
    those `pure`). A forced condition is not evaluated at all, so one with
    effects (an exchange, a decrement, a failpoint's count) changes the run
    where its value does not; and evaluating a comparison of plain operands
    beside the original in the trace run changes nothing (a && or || is not
    evaluated mutated at all: sites.py). The others run every test that
    reaches them."""
    return m.operator in ("if_forced", "relational", "logical", "constant") and \
        getattr(m, "pure", False)


def _watched_value(m):
    """What the trace run compares the original value with: the mutated
    expression, or for a && turned || (or back) the one value where the
    two can differ, so the mutated form, whose operands may need the
    other's guard, is never evaluated."""
    if m.operator == "logical":
        return m.watch_value
    return f"static_cast<bool>(({m.replacement}))"


def _switched(text, start, end, ms, original):
    expr = None
    line = line_of(text, start)
    watching = [m for m in ms if watched(m)]
    for m in reversed(ms):
        repl_fmt, orig_fmt = WRAP.get(m.operator, DEFAULT_WRAP)
        repl = repl_fmt.format(repl=m.replacement)
        if expr is None:
            orig = orig_fmt.format(orig=original)
            if watching:
                alternatives = ", ".join(
                    f"::faultlane_mutation::alternative{{{w.id}, {_watched_value(w)}}}"
                    for w in watching)
                if "\n" in alternatives:  # the text after the range keeps its lines
                    alternatives += f"\n#line {line_of(text, end)}\n"
                orig = f"FAULTLANE_WATCH(({original}), {alternatives})"
        else:
            orig = expr
        resync = f"\n#line {line}\n" if "\n" in repl else ""
        expr = f"(FAULTLANE_MUTANT({m.id}) ? {repl}{resync} : {orig})"
    return expr


ERROR = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):\d+: (?P<what>error|note|warning)")


def error_lines(compiler_output, path):
    """The lines of `path` that each of its errors (with its notes) names: a
    list of sets, one per error. A build's log holds other files' errors
    too: an error of another file, and its notes, are not `path`'s."""
    groups = []
    mine = False
    for row in compiler_output.splitlines():
        m = ERROR.match(row)
        if not m:
            continue
        here = m.group("file").endswith(path)
        if m.group("what") == "error":
            mine = here
            if mine:
                groups.append(set())
        if mine and here:
            groups[-1].add(int(m.group("line")))
    return groups


def to_drop(compiler_output, path, mutants):
    """The mutants an error names, innermost first: for each error, the
    mutants whose lines hold a line the error names, the narrowest of them.
    None when an error names no mutant's line (the whole file goes)."""
    drop = set()
    for lines in error_lines(compiler_output, path):
        hit = [m for m in mutants if any(m.line_first <= ln <= m.end_line for ln in lines)]
        if not hit:
            return None
        narrowest = min(m.end - m.start for m in hit)
        drop.update(m.id for m in hit if m.end - m.start == narrowest)
    return drop
