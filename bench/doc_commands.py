#!/usr/bin/env python3
"""Runs every faultlane-bench command line a user is shown, shortened.

The lines come from README.md and docs/benchmarks.md (```sh blocks: a line
that runs $B or .../faultlane-bench) and from ci/demo (its run_bench calls).
Each runs as written but for its length: --duration, --rounds and --warmup
are replaced by a short run, and output files go to a scratch folder. Each
must exit 0 and measure at least one operation (a transfer run's `ops N`, a
sweep's every point, an RPC run's every row). Exit 0 when all do. A line
that shortens to a run already made (ci/demo repeats lines of the docs with
its own --duration) is not run again: it is listed with the line it repeats.
A line that exits 0 but measures nothing in the short window runs again
with a 2 s window, then a 10 s one, before it fails (a heavily loaded
machine).

Under ThreadSanitizer (SANITIZER thread) the lines that move blocks of
16 MiB or more are left to the other presets: TSan annotates every byte a
socket receive writes, and one 64 MiB READ takes seconds there, so a short
window sees none complete. They are listed as skipped.

usage: doc_commands.py BENCH SOURCE_DIR [SANITIZER] [--list]
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

SHORT = ["--duration", "0.2", "--rounds", "1", "--warmup", "0.02"]
LONGER = ("2", "10")  # the windows of the later tries (below)
DROPPED = {"--duration", "--rounds", "--warmup"}  # each takes a value
OUTPUTS = {"--json", "--svg"}
# A million names take a minute to register under a sanitizer; the scans
# behave the same on fewer.
SCALED = {"--rpc-saturate": "20000"}


def joined_lines(text):
    """Lines with backslash continuations joined."""
    out, pending = [], ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    return out


def from_markdown(path):
    commands, in_sh = [], False
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for line in joined_lines(text):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_sh = not in_sh and stripped in ("```sh", "```bash", "```shell")
            continue
        if not in_sh:
            continue
        words = shlex.split(stripped, comments=True)
        if words and "=" not in words[0] and (words[0] == "$B" or
                                                words[0].endswith("/faultlane-bench")):
            commands.append((path, words[1:]))
    return commands


def from_demo(path):
    commands = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for line in joined_lines(text):
        stripped = line.strip()
        if not stripped.startswith("run_bench "):
            continue
        stripped = stripped.split("||")[0]
        words = shlex.split(stripped)
        commands.append((path, words[2:]))  # run_bench TITLE flags...
    return commands


def shortened(args, scratch):
    out, skip = [], False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        if word in DROPPED:
            skip = True
            continue
        if word == "|":  # `| tee FILE` at most: the output is read here
            break
        if word in OUTPUTS and i + 1 < len(args):
            out += [word, os.path.join(scratch, os.path.basename(args[i + 1]))]
            skip = True
            continue
        if word in SCALED and i + 1 < len(args):
            out += [word, SCALED[word]]
            skip = True
            continue
        out.append(word)
    return out + SHORT


def block_bytes(args):
    """--block-size's value in bytes (64K, 1M, 64M...), or 0."""
    if "--block-size" not in args:
        return 0
    text = args[args.index("--block-size") + 1]
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text.rstrip("KkMmGg")) * scale


def measured(args, output):
    """Why the output shows no measured operation, or None."""
    if "--rpc-saturate" in args:
        rows = re.findall(r"^  (?:pool|inline).*?\s(\d+)\s+\d+\s+\d+\s+[\d.]+ms$", output, re.M)
        return None if rows and all(int(n) > 0 for n in rows) else "a row with no ping"
    if "--rpc" in args:
        rows = re.findall(r"^  (?:point|ping).*?\s+(\d+)\s+[\d.]+", output, re.M)
        return None if rows and all(int(n) > 0 for n in rows) else "a row with no call"
    if "--sweep" in args:
        rows = re.findall(r"^  block .* faultlane\s+([\d.]+) [MG]B/s", output, re.M)
        return None if rows and all(float(r) > 0 for r in rows) else "a point that moved nothing"
    ops = re.findall(r"^  ops (\d+), failed", output, re.M)
    return None if ops and int(ops[-1]) > 0 else "no `ops N` line above 0"


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    bench, root = sys.argv[1], sys.argv[2]
    positional = [a for a in sys.argv[3:] if not a.startswith("--")]
    sanitizer = positional[0] if positional else "none"
    commands = []
    for doc in ("README.md", "docs/benchmarks.md"):
        commands += from_markdown(os.path.join(root, doc))
    commands += from_demo(os.path.join(root, "ci/demo"))
    if "--list" in sys.argv:
        for source, args in commands:
            print(os.path.relpath(source, root), " ".join(args))
        return 0
    if len(commands) < 5:
        print(f"found only {len(commands)} commands: the extraction is broken", file=sys.stderr)
        return 1
    failed = skipped = repeated = 0
    first_of = {}  # a shortened run -> the line that made it first
    with tempfile.TemporaryDirectory() as scratch:
        for source, args in commands:
            run = shortened(args, scratch)
            where = f"{os.path.relpath(source, root)}: faultlane-bench {' '.join(args)}"
            if tuple(run) in first_of:
                repeated += 1
                print(f"same {where}\n  runs as {first_of[tuple(run)]}")
                continue
            first_of[tuple(run)] = where
            if sanitizer == "thread" and block_bytes(args) >= 16 << 20:
                skipped += 1
                print(f"skip {where} (16 MiB blocks or more, under ThreadSanitizer)")
                continue
            done = subprocess.run([bench] + run, capture_output=True, text=True, timeout=240)
            output = done.stdout + done.stderr
            why = f"exit {done.returncode}" if done.returncode != 0 else measured(run, output)
            for window in LONGER:
                if done.returncode != 0 or not why:
                    break
                # The short window is this test's speed, not the rule: on a
                # machine loaded many times over (a sanitizer suite four at
                # a time beside another), one 64 MiB block under ASan can
                # outlast 0.2 s, and once outlasted 2 s. Again with a longer
                # window; a line that measures nothing in 10 s fails. The
                # rule (the line runs and measures an operation) is the
                # same at every length: no window hides a line that cannot.
                longer = run[:-len(SHORT)] + ["--duration", window] + SHORT[2:]
                done = subprocess.run([bench] + longer, capture_output=True, text=True,
                                      timeout=240)
                output = done.stdout + done.stderr
                why = f"exit {done.returncode}" if done.returncode != 0 \
                    else measured(longer, output)
            if why:
                failed += 1
                print(f"FAIL {where}\n  ran: {' '.join(run)}\n  {why}\n{output}")
            else:
                print(f"ok   {where}")
    passed = len(commands) - failed - skipped - repeated
    print(f"{passed} passed, {failed} failed, {skipped} skipped, {repeated} repeat a line above")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
