"""Mutation sites, found on clang's syntax tree (libclang, python3-clang).

A site is a range of one source file and the text that may take its place:
the operator table below says which kinds of node give which mutants. Only
nodes spelled in the file itself count: what a macro expands to, a header's
code and code in a constant-evaluated context (static_assert, case labels,
template arguments, enumerators, constexpr functions and variables, `if
constexpr`) give none, because the schema (schema.py) puts a run-time
switch in place of the range.
"""
import hashlib
import os
import re

import clang.cindex as ci

K = ci.CursorKind

# The operators, by name: what each does, for the report and the docs.
OPERATORS = {
    "relational": "a comparison turned by one (< <=, > >=) or == and != swapped",
    "logical": "&& and || swapped",
    "not_dropped": "a negation (!x) dropped",
    "not_added": "an if or while condition negated",
    "constant": "an integer constant moved by one",
    "call_deleted": "a call whose result is unused deleted (a store, notify, reset, clear, ...)",
    "if_forced": "an if condition forced true or false",
    "return_inverted": "a returned bool inverted",
    "memory_order": "a memory_order weakened to relaxed",
}

SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
         "&&": "||", "||": "&&"}
LOGICAL = {"&&", "||"}
STRONG_ORDERS = ("memory_order_acquire", "memory_order_release", "memory_order_acq_rel",
                 "memory_order_seq_cst", "memory_order::acquire", "memory_order::release",
                 "memory_order::acq_rel", "memory_order::seq_cst")
PLAIN_INT = re.compile(r"^(0|[1-9][0-9']*)([uU]?[lL]{0,2}|[lL]{1,2}[uU]?)$")
# Expressions that may be evaluated twice with no effect (sites.pure).
PURE_KINDS = {K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.INTEGER_LITERAL, K.FLOATING_LITERAL,
              K.CHARACTER_LITERAL, K.CXX_BOOL_LITERAL_EXPR, K.CXX_NULL_PTR_LITERAL_EXPR,
              K.PAREN_EXPR, K.UNEXPOSED_EXPR, K.CXX_THIS_EXPR, K.CSTYLE_CAST_EXPR,
              K.CXX_STATIC_CAST_EXPR, K.ARRAY_SUBSCRIPT_EXPR, K.BINARY_OPERATOR,
              K.UNARY_OPERATOR, K.TYPE_REF}
TK = ci.TypeKind
SCALAR_TYPES = {TK.BOOL, TK.CHAR_U, TK.UCHAR, TK.CHAR16, TK.CHAR32, TK.USHORT, TK.UINT, TK.ULONG,
                TK.ULONGLONG, TK.UINT128, TK.CHAR_S, TK.SCHAR, TK.WCHAR, TK.SHORT, TK.INT,
                TK.LONG, TK.LONGLONG, TK.INT128, TK.FLOAT, TK.DOUBLE, TK.LONGDOUBLE, TK.ENUM,
                TK.POINTER, TK.NULLPTR}
MACRO_LIKE = re.compile(r"^[A-Z][A-Z0-9_]+$")  # an upper-case name: a macro, most likely
IMPURE_TOKENS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--",
                 ",", "new", "delete", "co_await", "co_yield", "throw"}
# Nodes whose subtree is evaluated at compile time: no run-time switch fits.
CONSTANT_CONTEXTS = {K.STATIC_ASSERT, K.ENUM_CONSTANT_DECL, K.TEMPLATE_REF,
                     K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_NON_TYPE_PARAMETER,
                     K.TEMPLATE_TYPE_PARAMETER, K.FIELD_DECL}
FUNCTIONS = {K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR,
             K.FUNCTION_TEMPLATE, K.CONVERSION_FUNCTION, K.LAMBDA_EXPR}


class Mutant:
    """One mutant: replace text[start:end] (== original) by replacement."""

    def __init__(self, path, start, end, original, replacement, operator, line, col, function):
        self.path, self.start, self.end = path, start, end
        self.original, self.replacement = original, replacement
        self.operator, self.line, self.col, self.function = operator, line, col, function
        self.id = -1  # its index in a run's sample: the switch's number
        self.line_first = line  # the range's lines (line and col: where a person looks)
        self.end_line = line + original.count("\n")

    @property
    def key(self):
        """Where and what, for people: FILE:LINE:COL:OPERATOR."""
        return f"{self.path}:{self.line}:{self.col}:{self.operator}"

    @property
    def fingerprint(self):
        """What, not where: stable while the function and its text stay."""
        # The same change at several places of one function (a constant
        # repeated) is told apart by its rank among them.
        text = "\0".join((self.path, self.function, self.operator, " ".join(self.original.split()),
                          " ".join(self.replacement.split()), str(getattr(self, "occurrence", 0))))
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def diff(self, source):
        """The changed line before and after, one line each."""
        line_start = source.rfind("\n", 0, self.start) + 1
        line_end = source.find("\n", self.end)
        line_end = len(source) if line_end < 0 else line_end
        before = source[line_start:line_end]
        after = source[line_start:self.start] + self.replacement + source[self.end:line_end]
        return " ".join(before.split()), " ".join(after.split())

    def state(self):
        """Every field, for the site cache."""
        return dict(self.__dict__)

    @classmethod
    def from_state(cls, d):
        m = cls.__new__(cls)
        m.__dict__.update(d)
        return m

    def to_json(self):
        return {"id": self.id, "key": self.key, "fingerprint": self.fingerprint,
                "file": self.path, "line": self.line, "col": self.col,
                "operator": self.operator, "function": self.function,
                "original": self.original, "replacement": self.replacement}


def compile_args(command, source):
    """The compiler's arguments for parsing, without the output and the file."""
    import shlex
    words = shlex.split(command)[1:]
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
            continue
        if w in ("-o", "-c"):
            skip = w == "-o"
            continue
        if w == source or w.endswith(".cpp"):
            continue
        out.append(w)
    return out


class _Walker:
    def __init__(self, tu, path, rel, text):
        self.tu, self.path, self.rel, self.text = tu, path, rel, text
        self.raw = text.encode("latin-1")
        self.out = []
        self.skipped_macro = 0
        self.fn = None
        self.parent = None
        self.compared = {}  # a literal's span -> the pure comparison it is an operand of

    # Text and positions ---------------------------------------------------
    def span(self, cursor):
        e = cursor.extent
        if e.start.file is None or e.start.file.name != self.path or e.end.file is None \
                or e.end.file.name != self.path:
            return None
        return e.start.offset, e.end.offset

    def tokens(self, cursor):
        return list(cursor.get_tokens())

    def add(self, cursor, start, end, replacement, operator, function):
        original = self.raw[start:end].decode("latin-1")
        loc = cursor.extent.start
        # Line and column of `start` (an operator may start inside the node).
        line = self.raw.count(b"\n", 0, start) + 1
        col = start - (self.raw.rfind(b"\n", 0, start) + 1) + 1
        del loc
        self.out.append(Mutant(self.rel, start, end, original, replacement, operator, line, col,
                               function))

    # The walk --------------------------------------------------------------
    def walk(self, cursor, function="", constant=False, fn=None):
        for i, child in enumerate(cursor.get_children()):
            loc = child.location
            if loc.file is None or loc.file.name != self.path:
                continue
            kind = child.kind
            child_constant = constant or kind in CONSTANT_CONTEXTS or self.is_constexpr(child) \
                or (cursor.kind == K.CASE_STMT and i == 0)  # a case label, not its statement
            child_function, child_fn = function, fn
            if kind in FUNCTIONS:
                child_fn = child
                if kind != K.LAMBDA_EXPR:
                    child_function = child.spelling or function
            if not child_constant:
                self.fn = child_fn
                self.visit(child, child_function, cursor)
            self.walk(child, child_function, child_constant, child_fn)

    def is_constexpr(self, cursor):
        if cursor.kind not in FUNCTIONS and cursor.kind != K.VAR_DECL:
            return False
        for t in cursor.get_tokens():
            if t.spelling in ("constexpr", "consteval", "constinit"):
                return True
            if t.spelling in ("(", "{", "="):
                return False
        return False

    def visit(self, c, function, parent):
        self.parent = parent
        kind = c.kind
        if kind == K.BINARY_OPERATOR:
            self.binary(c, function)
        elif kind == K.CALL_EXPR and c.spelling.startswith("operator") and \
                c.spelling[8:] in SWAPS:
            self.binary(c, function, overloaded=True)
        elif kind == K.UNARY_OPERATOR:
            self.unary(c, function)
        elif kind == K.INTEGER_LITERAL:
            self.constant(c, function)
        elif kind in (K.IF_STMT, K.WHILE_STMT):
            self.condition(c, function)
        elif kind == K.RETURN_STMT:
            self.returned(c, function)
        elif kind == K.COMPOUND_STMT:
            self.call_statements(c, function)
        elif kind == K.DECL_REF_EXPR and c.spelling.startswith("memory_order"):
            self.memory_order(c, function)

    def operand_spans(self, c):
        spans = []
        for child in c.get_children():
            s = self.span(child)
            if s is None:
                return None
            spans.append(s)
        return spans

    def binary(self, c, function, overloaded=False):
        whole = self.span(c)
        spans = self.operand_spans(c)
        if whole is None or not spans:
            return
        # The operands: the first and the last child (an overloaded operator
        # has the callee's name between them).
        lhs, rhs = spans[0], spans[-1]
        if not (whole[0] <= lhs[0] and lhs[1] <= rhs[0] and rhs[1] <= whole[1]):
            self.skipped_macro += 1
            return
        between = [t for t in self.tokens(c) if lhs[1] <= t.extent.start.offset < rhs[0]]
        ops = [t for t in between if t.spelling in SWAPS]
        if len(ops) != 1 or (overloaded and ops[0].spelling != c.spelling[8:]):
            self.skipped_macro += 1
            return
        op = ops[0]
        start, end = op.extent.start.offset, op.extent.end.offset
        operator = "logical" if op.spelling in LOGICAL else "relational"
        # The range is the whole expression: the switch picks one of two.
        # The operands in parentheses: `a || b && c` mutated at its && is
        # `a || ((b) || (c))`, the node's own operands, as parsed.
        raw = self.raw
        mutated = "(" + raw[lhs[0]:lhs[1]].decode("latin-1") + ") " + SWAPS[op.spelling] + " (" + \
            raw[rhs[0]:rhs[1]].decode("latin-1") + ")"
        if overloaded or raw[whole[0]:lhs[0]].strip() or raw[rhs[1]:whole[1]].strip():
            mutated = (raw[whole[0]:start] + SWAPS[op.spelling].encode() +
                       raw[end:whole[1]]).decode("latin-1")
        self.add_range(c, whole, mutated, operator, function, at=start)
        if not overloaded:
            children = list(c.get_children())
            operands = (children[0], children[-1])
            self.out[-1].pure = all(self.pure(x) for x in operands)
            if operator == "relational" and self.out[-1].pure:
                # A literal compared here is moved inside the comparison
                # (constant), so its value is the comparison's and can be
                # watched like the comparison's own mutant.
                for x in operands:
                    while x.kind == K.UNEXPOSED_EXPR and len(list(x.get_children())) == 1:
                        x = next(x.get_children())
                    lit = self.span(x) if x.kind == K.INTEGER_LITERAL else None
                    if lit is not None:
                        self.compared[lit] = whole
            if operator == "logical":
                # The trace run never evaluates the mutated form (`a || b`
                # would evaluate `b` where `a && b` did not, and `b` may
                # need `a` as its guard: `p && p->n`, `s < 64 && x >> s`).
                # `a && b` turned `||` can differ only where the original is
                # false, `||` turned `&&` only where it is true: infected
                # there, a superset of where it differs, so never a test
                # left out that it would change.
                self.out[-1].watch_value = "true" if SWAPS[op.spelling] == "||" else "false"

    def pure(self, c, top=True):
        """Whether evaluating the expression again changes nothing and gives
        the same value: names, members, literals, casts, subscripts and
        arithmetic of those, of plain scalar types; no call, assignment,
        increment, atomic, volatile, dependent type (a template's operator
        may be anything) or macro (its spelling is not what runs)."""
        if c.kind not in PURE_KINDS:
            return False
        t = c.type.get_canonical()
        if t.kind in (TK.DEPENDENT, TK.ATOMIC, TK.INVALID) or t.is_volatile_qualified() or \
                "atomic" in t.spelling or "volatile" in t.spelling:
            return False
        if top and t.kind not in SCALAR_TYPES:
            return False
        spelled = [tok.spelling for tok in self.tokens(c)]
        if any(x in IMPURE_TOKENS or MACRO_LIKE.match(x) for x in spelled):
            return False
        return all(self.pure(x, top=False) for x in c.get_children())

    def add_range(self, c, whole, mutated, operator, function, at=None):
        self.add(c, whole[0], whole[1], mutated, operator, function)
        if at is not None:  # where a person looks: the operator, not the expression
            m = self.out[-1]
            m.line = self.raw.count(b"\n", 0, at) + 1
            m.col = at - (self.raw.rfind(b"\n", 0, at) + 1) + 1

    def unary(self, c, function):
        whole = self.span(c)
        toks = self.tokens(c)
        if whole is None or not toks or toks[0].spelling != "!":
            return
        if toks[0].extent.start.offset != whole[0]:
            return
        inner = self.raw[toks[0].extent.end.offset:whole[1]].decode("latin-1")
        self.add(c, whole[0], whole[1], f"static_cast<bool>({inner.strip()})", "not_dropped",
                 function)

    def constant(self, c, function):
        whole = self.span(c)
        if whole is None:
            return
        text = self.raw[whole[0]:whole[1]].decode("latin-1")
        m = PLAIN_INT.match(text)
        if not m or self.in_a_type(c, whole):
            return
        suffix = m.group(2)
        value = int(m.group(1).replace("'", ""))
        if value >= (1 << 31) - 2:
            return  # one more could change the literal's type, and the switch's with it
        moved = [f"{value + 1}{suffix}"] + ([f"{value - 1}{suffix}"] if value > 0 else [])
        outer = self.compared.get(whole)
        for literal in moved:
            if outer is None:
                self.add(c, whole[0], whole[1], literal, "constant", function)
                continue
            # The range is the comparison, the literal moved within it.
            raw = self.raw
            mutated = (raw[outer[0]:whole[0]] + literal.encode() + raw[whole[1]:outer[1]])
            self.add_range(c, outer, mutated.decode("latin-1"), "constant", function,
                           at=whole[0])
            self.out[-1].pure = True

    def in_a_type(self, c, whole):
        """A literal in a type: an array bound or a template argument, which
        a run-time switch would make a variable-length array or an error."""
        parent = self.parent
        declared = parent is not None and parent.kind in (K.VAR_DECL, K.FIELD_DECL, K.PARM_DECL)
        if declared and parent.location.file is not None and whole[0] < parent.location.offset:
            return True  # std::array<int, 4> x
        before = self.raw[:whole[0]].rstrip()[-1:]
        after = self.raw[whole[1]:].lstrip()[:1]
        return (before == b"<" and after in (b">", b",")) or (before == b"," and after == b">") \
            or (declared and before == b"[" and after == b"]")  # int x[4], not x[4]

    def condition_expr(self, c):
        """The condition of an if or while: the child between the parentheses
        when it is an expression (not a declaration, no init statement)."""
        toks = self.tokens(c)
        if len(toks) < 3 or toks[1].spelling != "(":
            return None  # `if constexpr`, `if consteval`, `if !`
        children = list(c.get_children())
        if not children or not children[0].kind.is_expression():
            return None
        s = self.span(children[0])
        if s is None or s[0] != toks[2].extent.start.offset:
            return None
        # The token after the condition must close the parentheses (no ';').
        after = [t for t in toks if t.extent.start.offset >= s[1]]
        if not after or after[0].spelling != ")":
            return None
        return children[0], s

    def condition(self, c, function):
        found = self.condition_expr(c)
        if found is None:
            return
        cond, s = found
        text = self.raw[s[0]:s[1]].decode("latin-1")
        self.add(cond, s[0], s[1], f"!({text})", "not_added", function)
        if c.kind == K.IF_STMT:
            # Forced, the condition is not evaluated at all: only one free
            # of effects can be watched (schema.watched).
            pure = self.pure(cond, top=False) and \
                cond.type.get_canonical().kind in SCALAR_TYPES
            for forced in ("true", "false"):
                self.add(cond, s[0], s[1], forced, "if_forced", function)
                self.out[-1].pure = pure

    def returned(self, c, function):
        children = list(c.get_children())
        if len(children) != 1 or children[0].type.get_canonical().kind != ci.TypeKind.BOOL:
            return
        # A function returning a reference would return one to the switch's
        # temporary: only a bool returned by value (or a lambda's).
        fn = self.fn
        if fn is None or (fn.kind != K.LAMBDA_EXPR and
                          fn.result_type.get_canonical().kind != ci.TypeKind.BOOL):
            return
        s = self.span(children[0])
        if s is None:
            return
        text = self.raw[s[0]:s[1]].decode("latin-1")
        self.add(children[0], s[0], s[1], f"!({text})", "return_inverted", function)

    def call_statements(self, c, function):
        for child in c.get_children():
            call = child
            while call.kind == K.UNEXPOSED_EXPR:
                inner = list(call.get_children())
                if len(inner) != 1:
                    break
                call = inner[0]
            if call.kind != K.CALL_EXPR or call.spelling.startswith("operator"):
                continue
            s = self.span(child)
            if s is None:
                continue
            text = self.raw[s[0]:s[1]].decode("latin-1")
            if "co_await" in text or "co_return" in text or "co_yield" in text:
                continue
            self.add(child, s[0], s[1], "static_cast<void>(0)", "call_deleted", function)

    def memory_order(self, c, function):
        s = self.span(c)
        if s is None:
            return
        text = self.raw[s[0]:s[1]].decode("latin-1")
        if not text.endswith(STRONG_ORDERS):
            return
        relaxed = text.rsplit("memory_order", 1)[0] + (
            "memory_order::relaxed" if "::" in text.rsplit("memory_order", 1)[1]
            else "memory_order_relaxed")
        self.add(c, s[0], s[1], relaxed, "memory_order", function)


_index = None


def find(path, rel, args):
    """Every mutant of the file at `path` (its name in reports: `rel`),
    parsed with the compiler arguments `args`. Returns (mutants, problems):
    problems are the parser's errors (a file that does not parse gives
    none)."""
    global _index
    if _index is None:
        _index = ci.Index.create()
    tu = _index.parse(path, args=args, options=ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES * 0)
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        return [], [f"{d.location.file}:{d.location.line}: {d.spelling}" for d in errors[:3]]
    with open(path, encoding="latin-1") as f:
        text = f.read()  # one character per byte: libclang's offsets count bytes
    w = _Walker(tu, os.path.abspath(path), rel, text)
    w.walk(tu.cursor)
    # One mutant per range and replacement (a node may be reached twice).
    seen, unique = set(), []
    for m in w.out:
        if (m.start, m.end, m.replacement) in seen or m.original == m.replacement:
            continue
        seen.add((m.start, m.end, m.replacement))
        unique.append(m)
    unique.sort(key=lambda m: (m.start, m.end, m.operator, m.replacement))
    ranks = {}
    for m in unique:
        m.occurrence = 0
        base = m.fingerprint
        m.occurrence = ranks.get(base, 0)
        ranks[base] = m.occurrence + 1
    return unique, []
