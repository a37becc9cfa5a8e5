"""The mutant files: parse, check, apply; ctest results; the report.

Two kinds of file share the format and this applier:
  - mutants (props/mutants/NN-name.mutant): bugs ci/mutate plants one at a
    time in the working tree, to find what the suite misses;
  - planted bugs (testing/planted/NAME.planted): bugs the harness's own tests
    switch on at run time (each behind FAULTLANE_FAILPOINT("planted.NAME")),
    to show that a checker or property catches them. The test builds compile
    the core from copies of its sources with every planted bug applied
    (`planted` below, run by core/CMakeLists.txt); the sources themselves,
    and every build without failpoints, carry none.
"""
import fnmatch, os, re, sys
import xml.etree.ElementTree as ET

NAME_RE = re.compile(r"^(\d{2})-[a-z0-9]+(-[a-z0-9]+)*\.mutant$")
PLANTED_NAME_RE = re.compile(r"^([a-z0-9]+(_[a-z0-9]+)*)\.planted$")
# The header lines each kind must have.
META = {"mutant": ("invariant", "why realistic"), "planted": ("invariant", "caught by")}
ALLOWED_ROOTS = ("core/src/", "relays/src/", "core/include/faultlane/core/net.hpp")


class Bad(Exception):
    pass


def strip_blank_tail(lines):
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def kind_of(path):
    return "planted" if path.endswith(".planted") else "mutant"


def parse(path):
    """{'invariant', 'why', 'kind', 'meta', 'edits': [(file, find_lines, replace_lines,
    the replace block's first line number in the file)]}"""
    kind = kind_of(path)
    meta, edits = {}, []
    current_file, block, find, replace, replace_at = None, None, None, None, 0

    def close_pair():
        nonlocal block, find, replace
        if block is None:
            return
        if block == "find":
            raise Bad("a '--- find' block without its '+++ replace'")
        edits.append((current_file, strip_blank_tail(find), strip_blank_tail(replace),
                      replace_at))
        block, find, replace = None, None, None

    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if line.startswith("file:"):
            close_pair()
            current_file = line[len("file:"):].strip()
            if not current_file:
                raise Bad(f"line {number}: 'file:' names no file")
            continue
        if line.rstrip() == "--- find":
            close_pair()
            if current_file is None:
                raise Bad(f"line {number}: '--- find' before any 'file:' line")
            block, find = "find", []
            continue
        if line.rstrip() == "+++ replace":
            if block != "find":
                raise Bad(f"line {number}: '+++ replace' without a '--- find' before it")
            block, replace, replace_at = "replace", [], number + 1
            continue
        if block == "find":
            find.append(line)
        elif block == "replace":
            replace.append(line)
        elif current_file is None:
            m = re.match(r"^#\s*([a-z ]+):\s*(.*)$", line)
            if m and m.group(1).strip() in META[kind]:
                meta[m.group(1).strip()] = m.group(2).strip()
            elif line.strip() and not line.startswith("#"):
                raise Bad(f"line {number}: unexpected text before the first 'file:' line")
        elif line.strip():
            raise Bad(f"line {number}: text outside a find/replace block")
    close_pair()
    for key in META[kind]:
        if not meta.get(key):
            raise Bad(f"no '# {key}: ...' line")
    if not edits:
        raise Bad("no find/replace pair")
    return {"invariant": meta["invariant"], "why": meta.get("why realistic", ""),
            "kind": kind, "meta": meta, "edits": edits}


def planted_name(path):
    m = PLANTED_NAME_RE.match(os.path.basename(path))
    if not m:
        raise Bad("file name is not name_in_snake_case.planted")
    return m.group(1)


def occurrences(text_lines, find):
    key = [x.rstrip() for x in find]
    have = [x.rstrip("\r\n").rstrip() for x in text_lines]
    n = len(key)
    return [i for i in range(len(have) - n + 1) if have[i:i + n] == key]


def mutated(root, mutant):
    """{relative path: (original text, mutated text)}; raises Bad."""
    out = {}
    for k, (rel, find, replace, _) in enumerate(mutant["edits"], 1):
        if not rel.startswith(ALLOWED_ROOTS) or ".." in rel.split("/"):
            raise Bad(f"pair {k}: {rel} is not under core/src/ or relays/src/ (or the seam, net.hpp)")
        if not find:
            raise Bad(f"pair {k}: the find block is empty")
        if [x.rstrip() for x in find] == [x.rstrip() for x in replace]:
            raise Bad(f"pair {k}: the replacement is the same as the find text")
        if mutant["kind"] == "mutant" and any("FAULTLANE_FAILPOINT" in x for x in find + replace):
            raise Bad(f"pair {k}: touches failpoint code (mutants stay out of it)")
        if mutant["kind"] == "planted":
            switch = f'FAULTLANE_FAILPOINT("planted.{mutant["name"]}")'
            if any("FAULTLANE_FAILPOINT" in x for x in find):
                raise Bad(f"pair {k}: its find text holds failpoint code")
            if not any(switch in x for x in replace):
                raise Bad(f"pair {k}: its replacement is not behind {switch}")
        path = os.path.join(root, rel)
        if rel not in out:
            if not os.path.isfile(path):
                raise Bad(f"pair {k}: no file {rel}")
            with open(path, encoding="utf-8", newline="") as f:
                original = f.read()
            out[rel] = (original, original)
        original, text = out[rel]
        lines = text.splitlines(keepends=True)
        at = occurrences(lines, find)  # in the file as the pairs before left it
        if len(at) != 1:
            raise Bad(f"pair {k}: the find text occurs {len(at)} times in {rel} (must be 1): "
                      f"{find[0].strip()!r}")
        i = at[0]
        lines[i:i + len(find)] = [x + "\n" for x in replace]
        out[rel] = (original, "".join(lines))
    for rel, (original, text) in out.items():
        if original == text:
            raise Bad(f"{rel} does not change")
    return out


def selected(directory, glob):
    names = sorted(n for n in os.listdir(directory) if n.endswith(".mutant"))
    return [n for n in names if fnmatch.fnmatch(n, glob)]


def cmd_check(root, directory, glob):
    names = selected(directory, glob)
    if not names:
        print(f"ci/mutate: no mutant matches {glob!r} in {directory}")
        return 1
    failures, numbers = 0, {}
    for name in names:
        problems = []
        m = NAME_RE.match(name)
        if not m:
            problems.append("file name is not NN-short-name.mutant (lower case, dashes)")
        elif m.group(1) in numbers:
            problems.append(f"number {m.group(1)} is also used by {numbers[m.group(1)]}")
        else:
            numbers[m.group(1)] = name
        try:
            mutated(root, parse(os.path.join(directory, name)))
        except Bad as e:
            problems.append(str(e))
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f"cannot read: {e}")
        for p in problems:
            print(f"props/mutants/{name}: {p}")
        failures += bool(problems)
    ok = len(names) - failures
    print(f"ci/mutate --check: {ok} of {len(names)} mutants apply"
          + ("" if not failures else f"; {failures} broken (above)"))
    return 1 if failures else 0


def cmd_list(directory, glob):
    for name in selected(directory, glob):
        print(name)
    return 0


def cmd_files(path):
    files = []
    for rel, _, _, _ in parse(path)["edits"]:
        if rel not in files:
            files.append(rel)
    print("\n".join(files))
    return 0


def cmd_apply(root, path):
    try:
        changes = mutated(root, parse(path))
    except Bad as e:
        print(e)
        return 1
    for rel, (_, text) in changes.items():
        with open(os.path.join(root, rel), "w", encoding="utf-8", newline="") as f:
            f.write(text)
    return 0


def cmd_invariant(path):
    try:
        print(parse(path)["invariant"])
    except (Bad, OSError) as e:
        print(f"(unreadable: {e})")
    return 0


def cmd_failed(junit, log):
    """Names of the failed tests, from the JUnit file or else ctest's log."""
    names = []
    try:
        for case in ET.parse(junit).getroot().iter("testcase"):
            failed = case.get("status") == "fail" or any(
                child.tag in ("failure", "error") for child in case)
            if failed and case.get("name") not in names:
                names.append(case.get("name"))
    except (OSError, ET.ParseError):
        pass
    if not names and os.path.exists(log):
        in_list = False
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("The following tests FAILED:"):
                    in_list = True
                    continue
                m = re.match(r"^\s*\d+\s+-\s+(.+?)\s+\(([^)]*)\)\s*$", line)
                if in_list and m:
                    names.append(m.group(1))
                elif in_list and line.strip() and not m:
                    in_list = False
    print("\n".join(names))
    return 0


def load_planted(path):
    name = planted_name(path)
    mutant = parse(path)
    mutant["name"] = name
    return mutant


def cmd_check_planted(root, directory):
    """Every planted bug parses and applies to the sources as they are now."""
    names = sorted(n for n in os.listdir(directory) if n.endswith(".planted"))
    failures = 0
    for name in names:
        try:
            mutated(root, load_planted(os.path.join(directory, name)))
        except Bad as e:
            print(f"{os.path.relpath(os.path.join(directory, name), root)}: {e}")
            failures += 1
        except (OSError, UnicodeDecodeError) as e:
            print(f"{name}: cannot read: {e}")
            failures += 1
    print(f"planted bugs: {len(names) - failures} of {len(names)} apply")
    return 1 if failures or not names else 0


def cmd_planted(root, directory, rel, out):
    """Writes `out`: source file `rel` with every planted bug in `directory` that
    touches it applied, in name order. #line directives keep each line's own
    place, so a diagnostic or an assert names the source's line, or the
    planted file's line for the planted code."""
    source = os.path.abspath(os.path.join(root, rel))
    with open(source, encoding="utf-8") as f:
        lines = [(text, source, n) for n, text in enumerate(f.read().splitlines(), 1)]
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".planted")):
        path = os.path.abspath(os.path.join(directory, name))
        try:
            mutant = load_planted(path)
            mutated(root, mutant)  # checks every pair, in every file it touches
        except Bad as e:
            print(f"{os.path.relpath(path, root)}: {e}", file=sys.stderr)
            return 1
        for file, find, replace, at in mutant["edits"]:
            if file != rel:
                continue
            found = occurrences([t for t, _, _ in lines], find)
            if len(found) != 1:
                print(f"{os.path.relpath(path, root)}: its find text occurs {len(found)} times in "
                      f"{rel} once the planted bugs before it are applied", file=sys.stderr)
                return 1
            i = found[0]
            lines[i:i + len(find)] = [(t, path, at + k) for k, t in enumerate(replace)]
    text, expect = [], None
    for line, origin, number in lines:
        if expect != (origin, number):
            text.append(f'#line {number} "{origin}"')
        text.append(line)
        expect = (origin, number + 1)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(text) + "\n")
    return 0


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def cmd_report(results, out):
    rows, killed = [], 0
    with open(results, encoding="utf-8") as f:
        for line in f:
            name, verdict, tests, invariant = line.rstrip("\n").split("\t", 3)
            tests = [t for t in tests.split(",") if t]
            shown = ", ".join(f"`{t}`" for t in tests[:3])
            if len(tests) > 3:
                shown += f", +{len(tests) - 3} more"
            killed += verdict == "killed"
            rows.append(f"| {cell(name)} | {cell(invariant)} | {cell(shown) or '-'} | {verdict} |")
    total = len(rows)
    percent = 100.0 * killed / total if total else 0.0
    text = "\n".join(["| mutant | invariant | killed by (first 3 test names, +N more) | verdict |",
                      "|---|---|---|---|", *rows, "",
                      f"killed {killed} of {total} ({percent:.0f}%)", ""])
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


COMMANDS = {
    "check": cmd_check, "list": cmd_list, "files": cmd_files, "apply": cmd_apply,
    "invariant": cmd_invariant, "failed": cmd_failed, "report": cmd_report,
    "check-planted": cmd_check_planted, "planted": cmd_planted,
}


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd not in COMMANDS:
        raise SystemExit(f"mutants.py: unknown command {cmd}")
    return COMMANDS[cmd](*args)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
