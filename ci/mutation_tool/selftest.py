#!/usr/bin/python3
"""ci/mutation's own test (ctest: mutation_tool_selftest, label lint).

On a small C++ file written here it checks each part of the tool on its own:
  - the site finder: every operator finds its sites, and nothing is found in
    what a macro expands to or in a constant-evaluated context;
  - the schemata: the file with every mutant behind its switch compiles, runs
    as the original with no mutant switched on, and each switch changes what
    the program prints (a mutant the program cannot tell apart is named);
  - the trace: the switches a run reaches are written, and only those;
  - pruning: a mutant the compiler refuses is dropped by the lines the error
    names, and the others stay;
  - the scheduler: a failing test kills its mutant and stops the mutant's
    other tests at once, a mutant every test passes survived, one no test
    reaches is not reached, a test past its limit times the mutant out, a
    mutant's first test runs alone and the test that killed a mutant of a
    file runs first for the next; a mutant's tests past its first-pass
    seconds wait while another mutant's first pass can start one, and a
    deadline cuts a survivor short;
  - bad input to ci/mutation: exit 2 with a message, before anything runs.

usage: selftest.py CXX
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402
import schema  # noqa: E402
import sites  # noqa: E402
import tests  # noqa: E402

FIXTURE = r"""#include <atomic>
#include <cstdio>
#define TWICE(x) ((x) + (x))
constexpr int table_size = 4;
static_assert(table_size > 3);
std::atomic<int> flag{0};
int counter = 0;
void bump() { ++counter; }
bool small(int x) { return x < 10; }
bool positive(const int* p) { return p && *p > 0; }
int pick(int a, int b) {
  if (a == b && a > 0) return 1;
  if (!(a >= b) || b <= 2) return 2;
  return TWICE(a < b);
}
int main() {
  for (int a = -1; a < table_size; ++a) {
    for (int b = 0; b < table_size; ++b) std::printf("%d", pick(a, b));
  }
  bump();
  if (counter >= 1) bump();
  if (counter >= 0) bump();
  flag.store(7, std::memory_order_release);
  for (int spins = 0; flag.load(std::memory_order_acquire) == 0 && spins < 3; ++spins) ++counter;
  std::printf(" %d %d %d %d", counter, small(9), small(10), flag.load());
  std::printf(" %d %d\n", positive(&counter), positive(nullptr));
  return 0;
}
"""

# Operators the fixture must give at least one mutant each.
EXPECTED = set(sites.OPERATORS)


def fail(message):
    print(f"FAIL {message}")
    sys.exit(1)


def compile_and_run(cxx, text, folder, env=None, expect_compile=True):
    src = os.path.join(folder, "fixture.cpp")
    exe = os.path.join(folder, "fixture")
    with open(src, "w", encoding="utf-8") as f:
        f.write(text)
    done = subprocess.run([cxx, "-std=c++20", "-O0", "-o", exe, src], capture_output=True,
                          text=True)
    if done.returncode != 0:
        if expect_compile:
            fail("the schema does not compile:\n" + done.stderr[:3000])
        return None, done.stderr
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=2,
                             env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        return "(hangs)", ""
    return out.stdout, ""


def check_sites(path):
    found, problems = sites.find(path, "fixture.cpp", ["-std=c++20"])
    if problems:
        fail(f"the fixture does not parse: {problems}")
    operators = {m.operator for m in found}
    if operators != EXPECTED:
        fail(f"operators found {sorted(operators)}, want {sorted(EXPECTED)}")
    text = open(path, encoding="utf-8").read()
    macro_line = text[:text.index("TWICE(a < b)")].count("\n") + 1
    assert_line = text[:text.index("static_assert")].count("\n") + 1
    for m in found:
        if m.line_first in (macro_line, assert_line, 3, 4):
            fail(f"a site in a macro or a constant context: {m.key} {m.replacement}")
    return found


def check_schemata(cxx, found, folder):
    for i, m in enumerate(found):
        m.id = i
    text = open(os.path.join(folder, "orig.cpp"), encoding="utf-8").read()
    rendered, dropped = schema.render(text, found, os.path.join(HERE, "switch.hpp"))
    if dropped:
        fail(f"nested ranges dropped: {[m.key for m in dropped]}")
    original, _ = compile_and_run(cxx, text, folder)
    plain, _ = compile_and_run(cxx, rendered, folder)
    if plain != original:
        fail(f"with no mutant on, the schema prints {plain!r}, the original {original!r}")
    # Each switch runs exactly as the mutant written out by hand: the same
    # output (or the same hang) as the file with that one change compiled
    # alone. Most must differ from the original, or the fixture proves
    # nothing.
    def alone(m):
        folder_m = os.path.join(folder, f"alone{m.id}")
        os.makedirs(folder_m)
        return compile_and_run(cxx, text[:m.start] + m.replacement + text[m.end:], folder_m)[0]

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        written_out = list(pool.map(alone, found))
    changed = 0
    for m, want in zip(found, written_out):
        out, _ = compile_and_run_cached(folder, {"FAULTLANE_MUTANT": str(m.id)})
        changed += out != original
        if out != want:
            fail(f"switch {m.id} ({m.key} {m.original!r} -> {m.replacement!r}) prints {out!r}; "
                 f"the mutant written out prints {want!r}")
    if changed < len(found) * 2 // 3:
        fail(f"only {changed} of {len(found)} mutants change what the fixture prints")
    # The trace: a run writes the switches it reaches, once each.
    trace = os.path.join(folder, "trace")
    os.makedirs(trace)
    compile_and_run_cached(folder, {"FAULTLANE_MUTANT_TRACE": trace})
    lines = []
    for name in os.listdir(trace):
        lines += open(os.path.join(trace, name), encoding="utf-8").read().split()
    reached = [int(x) for x in lines if not x.startswith("i")]
    infected = [int(x[1:]) for x in lines if x.startswith("i")]
    if len(reached) != len(set(reached)) or len(infected) != len(set(infected)):
        fail("a switch or an infection was written twice")
    check_infection(found, text, set(reached), set(infected))
    # All but the operand && never evaluates (flag is set, so `spins < 3`
    # is skipped): those switches are never reached, so never written.
    skipped = text.index("spins < 3")
    unreached = {m.id for m in found if skipped <= m.start < skipped + len("spins < 3")}
    if not unreached or set(reached) != {m.id for m in found} - unreached:
        fail(f"the trace holds {sorted(reached)}; every switch but {sorted(unreached)} runs")
    return rendered


def check_infection(found, text, reached, infected):
    """Only watched mutants are written as infected, each reached, and
    exactly where its value differs. At `counter >= 1` counter is 1: `> 1`
    differs (infected), and so does forcing it false, not forcing it true.
    At `counter >= 0` counter is 2: `> 0` does not differ (not infected)."""
    watched = {m.id for m in found if schema.watched(m)}
    if not infected <= watched & reached:
        fail(f"infected {sorted(infected)}: not all watched {sorted(watched)} and reached")

    def at(condition):
        here = [m for m in found if m.start == text.index(condition)]
        forced = {m.replacement: m for m in here if m.operator == "if_forced"}
        turned = [m for m in here if m.operator == "relational"]
        if set(forced) != {"true", "false"} or len(turned) != 1 or \
                not getattr(turned[0], "pure", False):
            fail(f"the fixture's `{condition}` gives "
                 f"{[(m.operator, m.replacement) for m in here]}")
        return forced, turned[0]

    forced, turned = at("counter >= 1")
    if forced["true"].id in infected or forced["false"].id not in infected:
        fail("a condition that holds: forcing it true must not infect, forcing it false must")
    if turned.id not in infected:
        fail("`counter >= 1` as `counter > 1` with counter 1 differs: not written as infected")
    _, turned = at("counter >= 0")
    if turned.id in infected:
        fail("`counter >= 0` as `counter > 0` with counter 2 does not differ: written as infected")
    # A literal compared is moved inside its comparison, and watched: at
    # `counter >= 1` (counter 1) `>= 2` differs and `>= 0` does not; at
    # `counter >= 0` (counter 2) `>= 1` does not.
    for condition, moved, differs in (("counter >= 1", "counter >= 2", True),
                                      ("counter >= 1", "counter >= 0", False),
                                      ("counter >= 0", "counter >= 1", False)):
        m = [x for x in found if x.operator == "constant" and x.start == text.index(condition)
             and x.replacement == moved]
        if len(m) != 1 or not schema.watched(m[0]):
            fail(f"`{condition}` as `{moved}`: want one watched constant, got {m}")
        if (m[0].id in infected) != differs:
            fail(f"`{condition}` as `{moved}`: infected is {m[0].id in infected}, want {differs}")
    # `a == b && a > 0` as `||` can differ where the original is false:
    # watched and infected. `p && *p > 0` as `||` is watched too, and the
    # trace run, which reached it with a null p, never evaluated `*p` (it
    # would have crashed, and the reached switches are checked above).
    for at_text in ("a == b &&", "p && *p"):
        both = [m for m in found if m.operator == "logical" and m.start == text.index(at_text)]
        if len(both) != 1 or not schema.watched(both[0]) or both[0].id not in infected:
            fail(f"`{at_text}` turned `||`: want watched and infected, got {both}")
    with_calls = [m for m in found if m.operator == "relational" and "flag.load" in m.original]
    if not with_calls or any(getattr(m, "pure", False) for m in with_calls):
        fail("a comparison with a call in it was marked pure (or none was found)")


def compile_and_run_cached(folder, env):
    exe = os.path.join(folder, "fixture")
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=2,
                             env=dict(os.environ, **env))
    except subprocess.TimeoutExpired:
        return "(hangs)", ""  # a mutant may loop forever: that is a change too
    return out.stdout, ""


def check_pruning(cxx, found, folder):
    """A mutant in a constant expression (the finder leaves those out; here
    one is made by hand) cannot take a run-time switch: the compiler's error
    names its line, and pruning drops it and keeps the rest."""
    text = open(os.path.join(folder, "orig.cpp"), encoding="utf-8").read()
    at = text.index("table_size = 4") + len("table_size = ")
    broken = sites.Mutant("fixture.cpp", at, at + 1, "4", "5", "constant",
                          text[:at].count("\n") + 1, 1, "")
    broken.id = len(found)
    everything = found + [broken]
    rendered, _ = schema.render(text, everything, os.path.join(HERE, "switch.hpp"))
    _, errors = compile_and_run(cxx, rendered, folder, expect_compile=False)
    if not errors:
        fail("the planted mutant that cannot compile compiled")
    drop = schema.to_drop(errors, "fixture.cpp", everything)
    if drop != {broken.id}:
        fail(f"pruning dropped {drop}, want only {broken.id}")
    # In a build's log, beside other files' errors: only this file's error
    # names mutants, and the file with no error keeps all of its own.
    other = "other.cpp:%d:3: error: no member named 'x'\nother.cpp:%d:1: note: here\n" % (
        broken.line, broken.line)
    log = other + errors + other
    for m in everything:
        m.outcome = None
    if schema.to_drop(log, "fixture.cpp", everything) != {broken.id}:
        fail("pruning from a build's log took another file's errors as the fixture's")
    names = load_tool().refused_by(log, everything, set())
    if names != {"fixture.cpp": {broken.id}}:
        fail(f"a build's log refuses {names}, want only fixture.cpp's {broken.id}")


def load_tool():
    import importlib.machinery
    import importlib.util
    path = os.path.join(os.path.dirname(HERE), "mutation")
    loader = importlib.machinery.SourceFileLoader("mutation_tool_main", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    tool = importlib.util.module_from_spec(spec)
    loader.exec_module(tool)
    return tool


def check_scheduler(folder):
    """Tests are shell commands that log their start and end; the mutants
    are stand-ins with the fields the scheduler reads."""
    tool = load_tool()
    log = os.path.join(folder, "sched.log")

    def test(name, body, seconds):
        t = tests.Test({"name": name, "command": ["sh", "-c", f"echo start {name} $FAULTLANE_MUTANT"
                                                  f" >> {log}; {body}"]})
        t.seconds = seconds
        return t

    class M:
        def __init__(self, i, path):
            self.id, self.path, self.key, self.outcome = i, path, f"m{i}", None
            self.operator = "constant"

    # m0: `quick` passes, then `kill0` fails while `slow` (60 s) runs beside
    # it; m2: every test passes; m3: no test reaches it; m4: its test runs
    # past its limit.
    slow = test("slow", 'if test "$FAULTLANE_MUTANT" = 0; then sleep 60; fi', 5.0)
    kill0 = test("kill0", 'test "$FAULTLANE_MUTANT" != 0 && test "$FAULTLANE_MUTANT" != 1', 0.5)
    quick = test("quick", "true", 0.2)
    hang = test("hang", 'if test "$FAULTLANE_MUTANT" = 4; then sleep 60; fi', 0.0)
    # m5: its test runs past the limit once only (a burst of load): survived.
    once = os.path.join(folder, "once")
    lag = test("lag", f'if test "$FAULTLANE_MUTANT" = 5 && ! test -e {once}; then touch {once};'
                      f' sleep 60; fi', 0.0)
    reach = {"slow": {0, 1, 2}, "kill0": {0, 1}, "quick": {0, 1, 2}, "hang": {4}, "lag": {5}}
    every = [slow, kill0, quick, hang, lag]
    for t in every:
        t.reached = reach[t.name]
    tool.limit_for = lambda t: 3.0 if t.name in ("hang", "lag") else 120.0

    # A test's thread may start late (a loaded machine): here every test
    # but `quick` starts half a second late, so that `quick` ends while the
    # others of its mutant are started but not yet running, which must not
    # make the mutant a survivor.
    on_time = tool.Scheduler._one

    def late(self, plan, step, cancel):
        if step[2].name != "quick":
            time.sleep(0.5)
        on_time(self, plan, step, cancel)

    tool.Scheduler._one = late

    def schedule(mutants, slots):
        plans = [tool.Plan(m, ["dsim"], {"dsim": every}) for m in mutants]
        results = {}
        tool.Scheduler(plans, tests.Pacer(slots, slots), time.monotonic() + 600,
                       lambda m, r: results.setdefault(m.id, r)).run()
        return results

    start = time.monotonic()
    results = schedule([M(0, "a.cpp"), M(2, "b.cpp"), M(3, "b.cpp"), M(4, "c.cpp"),
                        M(5, "d.cpp")], 4)
    took = time.monotonic() - start
    want = {0: "killed", 2: "survived", 3: "not_reached", 4: "timed_out", 5: "survived"}
    got = {i: r["outcome"] for i, r in results.items()}
    if got != want:
        fail(f"the scheduler's outcomes {got}, want {want}")
    if results[0]["by"] != "dsim: kill0" or results[0]["tests_reached"] != 3:
        fail(f"mutant 0: {results[0]}, want killed by kill0 with 3 tests reaching it")
    if took > 30:
        fail(f"the scheduler took {took:.0f} s: the killed mutant's `slow` kept running")
    started = [line.split() for line in open(log, encoding="utf-8").read().splitlines()]
    if [name for name, m in ((x[1], x[2]) for x in started if len(x) == 3) if m == "0"][:1] \
            != ["quick"]:
        fail(f"mutant 0's tests started {started}; its quickest goes first")
    # One slot: mutant 0 dies by kill0, and mutant 1 (the same file) runs
    # kill0 first although `quick` is quicker.
    os.remove(log)
    results = schedule([M(0, "a.cpp"), M(1, "a.cpp")], 1)
    m1 = [x[1] for x in (line.split() for line in open(log, encoding="utf-8")) if x[2:] == ["1"]]
    if m1 != ["kill0"] or results[1]["outcome"] != "killed":
        fail(f"mutant 1 ran {m1} and was {results[1]['outcome']}; the test that killed "
             f"mutant 0 of its file goes first and kills it")
    # A quick test named after the mutant's file goes before a quicker one:
    # mutant 0 of src/kill0.cpp runs kill0 before `quick`.
    os.remove(log)
    schedule([M(0, "src/kill0.cpp")], 1)
    m0 = [x[1] for x in (line.split() for line in open(log, encoding="utf-8")) if x[2:] == ["0"]]
    if m0[:1] != ["kill0"]:
        fail(f"mutant 0 of src/kill0.cpp ran {m0}; the test named after its file goes first")
    # ...but only a quick one: `slow` (5 s) is named after slow.cpp, and
    # past a NAMED_SECONDS_MAX of 1 s it keeps its place after `quick`.
    limit = tool.NAMED_SECONDS_MAX
    tool.NAMED_SECONDS_MAX = 1.0
    steps = sorted([(0, "dsim", slow), (1, "dsim", quick)],
                   key=tool.first_tests_first("src/slow.cpp", {}))
    tool.NAMED_SECONDS_MAX = limit
    if [s[2].name for s in steps] != ["quick", "slow"]:
        fail(f"src/slow.cpp's tests sort {[s[2].name for s in steps]}: a slow test named "
             f"after the file goes by its seconds")
    for path, name, want in (("a/io_pool.cpp", "io_pool.busy", True),
                             ("a/admission.cpp", "tasks/admission_underflow_case.x/0", True),
                             ("a/rail.cpp", "rails/rail_slicing.x/2", True),
                             ("a/rails.cpp", "rails/rail_slicing.x/2", False),
                             ("a/pool.cpp", "io_pool.busy", False),
                             ("a/io.cpp", "io_pool.busy", True),
                             ("a/io_poo.cpp", "io_pool.busy", False),
                             ("a/busy.cpp", "io_pool.busy", False)):
        if tool.named_after(path, name) != want:
            fail(f"named_after({path}, {name}) is not {want}")


def check_two_passes(folder):
    """A mutant's tests past its first-pass seconds wait while a mutant
    still in its first pass can start one; past the deadline no test
    starts, the running ones finish, and a mutant with tests left survived,
    cut short."""
    tool = load_tool()
    log = os.path.join(folder, "passes.log")

    def test(name, seconds):
        t = tests.Test({"name": name, "command": ["sh", "-c", f"echo {name} $FAULTLANE_MUTANT"
                                                  f" >> {log}; sleep {seconds}"]})
        t.seconds, t.reached = seconds, {0, 1, 2}
        return t

    class M:
        def __init__(self, i):
            self.id, self.path, self.key, self.outcome = i, f"f{i}.cpp", f"m{i}", None
            self.operator = "constant"

    def schedule(every, mutants, slots, first_pass, on_start=None):
        """Runs the plans; on_start(sched, plan) before each test."""
        if os.path.exists(log):
            os.remove(log)
        plans = [tool.Plan(M(i), ["dsim"], {"dsim": every}) for i in range(mutants)]
        results = {}

        def done(m, r):
            if m.id in results:
                fail(f"mutant {m.id} was reported twice: {results[m.id]}, then {r}")
            results[m.id] = r

        sched = tool.Scheduler(plans, tests.Pacer(slots, slots), float("inf"), done, first_pass)
        if on_start is not None:
            plain = sched._one

            def one(plan, step, cancel):
                on_start(sched, plan)
                plain(plan, step, cancel)

            sched._one = one
        sched.run()
        if len(results) != mutants:
            fail(f"{len(results)} of {mutants} mutants reported: {results}")
        ran = [tuple(line.split()) for line in open(log, encoding="utf-8")] \
            if os.path.exists(log) else []
        return results, [m for _, m in ran]

    # One slot, 0.5 s tests, a first pass of 0.9 s: two tests a mutant (the
    # second starts at 0.5 s spent, the third would at 1.0 s), then the
    # third tests, oldest mutant first. Each test is taken to last what it
    # states, whatever the machine's load made of its sleep (a 0.5 s sleep
    # measured 0.95 s under three test suites, and mutant 1 lost its
    # second first-pass test): the order is the scheduler's, not the load's.
    measured = tests.run

    def as_stated(t, env, limit, cancel=None):
        verdict, _, tail = measured(t, env, limit, cancel)
        return verdict, t.seconds, tail

    tests.run = as_stated
    try:
        three = [test(f"t{k}", 0.5) for k in range(3)]
        results, order = schedule(three, 3, 1, 0.9)
    finally:
        tests.run = measured
    if order != ["0", "0", "1", "1", "2", "2", "0", "1", "2"]:
        fail(f"two passes ran the mutants in the order {order}: every first pass goes first")
    if any(r["outcome"] != "survived" or r["cut_short"] for r in results.values()):
        fail(f"two passes with time for all: {results}, want survivors not cut short")
    # Without a first-pass bound, a mutant runs all its tests before the next.
    _, order = schedule(three, 3, 1, float("inf"))
    if order != ["0", "0", "0", "1", "1", "1", "2", "2", "2"]:
        fail(f"one pass ran {order}: a mutant's tests run before the next mutant's")

    def deadline_at(sched, plan, running):
        if plan.m.id == 0 and len(plan.running) == running:
            sched.deadline = float("-inf")

    # One slot, the deadline passing as mutant 0's first test starts: that
    # test finishes, and no other starts.
    quick = [test(f"q{k}", 0.1) for k in range(4)]
    results, order = schedule(quick, 3, 1, float("inf"), lambda s, p: deadline_at(s, p, 1))
    m0 = results[0]
    if order != ["0"] or m0["outcome"] != "survived" or not m0["cut_short"] \
            or m0["tests_finished"] != 1:
        fail(f"a deadline at the first test: ran {order}, mutant 0 {m0}; want one test, "
             f"survived, cut short")
    if results[1]["outcome"] != "not_run" or results[2]["outcome"] != "not_run":
        fail(f"a deadline before mutants 1 and 2: {results[1]}, {results[2]}; want not run")
    # Two slots, one mutant of four tests, the deadline passing while its
    # second and third run side by side: both finish, the fourth never
    # starts, and it is reported once, cut short after three.
    results, order = schedule(quick, 1, 2, float("inf"), lambda s, p: deadline_at(s, p, 2))
    m0 = results[0]
    if order != ["0"] * 3 or m0["outcome"] != "survived" or not m0["cut_short"] \
            or m0["tests_finished"] != 3:
        fail(f"a deadline with two tests running: ran {order}, {m0}; want three tests, "
             f"survived, cut short")
    rows = report.tally([dict(m0, file="core/src/x.cpp")])
    text = report.markdown(
        {"command": "x", "commit": "c", "seed": 1, "date": "d", "minutes": 1, "jobs": 1,
         "mutants_per_minute": 1, "setup_minutes": 0}, rows,
        [dict(m0, file="core/src/x.cpp", key="k", operator="constant", function="f",
              preset="dsim", before="a", after="b", fingerprint="0" * 12)])
    if rows["all"]["cut_short"] != 1 or "| 1 (1) |" not in text \
            or "cut short by the budget after 3 of the 4" not in text:
        fail(f"the report does not count or say the survivor cut short: {rows['all']}\n{text}")


def check_rescore(folder):
    """--rescore applies the equivalents file to a written report again:
    a listed survivor leaves the score, an unlisted equivalent returns."""
    tool = load_tool()
    tool.EQUIVALENT_FILE = os.path.join(folder, "equivalent.txt")
    with open(tool.EQUIVALENT_FILE, "w", encoding="utf-8") as f:
        f.write("# a comment\n" + "a" * 12 + " core/src/x.cpp:1 reserve() sets capacity only\n")
    out = os.path.join(folder, "rescore")
    os.makedirs(out, exist_ok=True)

    def mutant(fingerprint, outcome):
        return {"fingerprint": fingerprint, "file": "core/src/x.cpp", "key": "k",
                "operator": "constant", "function": "f", "preset": "dsim", "before": "a",
                "after": "b", "outcome": outcome, "tests_reached": 1, "by": None}

    run = {"command": "x", "commit": "c", "seed": 1, "date": "d", "minutes": 1, "jobs": 1,
           "mutants_per_minute": 1, "setup_minutes": 0}
    report.write(os.path.join(out, "report.json"), os.path.join(out, "report.md"), run,
                 [dict(mutant("a" * 12, "survived"), cut_short=True, tests_finished=1,
                       tests_run=2), mutant("b" * 12, "killed"),
                  dict(mutant("c" * 12, "equivalent"), reason="old", was="not_reached")])

    def rescored():
        tool.rescore(out)
        with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
            return {m["fingerprint"][0]: m for m in json.load(f)["mutants"]}

    got = rescored()
    if {k: m["outcome"] for k, m in got.items()} != \
            {"a": "equivalent", "b": "killed", "c": "not_reached"} \
            or "reason" in got["c"] or "was" in got["c"] \
            or got["a"]["reason"] != "reserve() sets capacity only":
        fail(f"--rescore gave {got}; want a equivalent, b killed, c back to not reached")
    text = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    if "## Equivalent (1)" not in text or "reserve() sets capacity only" not in text:
        fail(f"a rescored report.md lists no equivalents:\n{text}")
    if rescored() != got:
        fail("a second --rescore changed the report")
    # Unlisted again, a survivor cut short comes back cut short.
    with open(tool.EQUIVALENT_FILE, "w", encoding="utf-8") as f:
        f.write("# none\n")
    back = rescored()["a"]
    if back["outcome"] != "survived" or not back.get("cut_short") or "reason" in back:
        fail(f"an unlisted equivalent came back as {back}; want survived, cut short")


def check_pacer(folder):
    """Past its floor, a test starts only on idle CPUs, a second after the
    last start, and never past the ceiling."""
    stat = os.path.join(folder, "stat")

    def cpu(total, idle):
        with open(stat, "w", encoding="ascii") as f:
            f.write(f"cpu  {total - idle} 0 0 {idle} 0 0 0 0 0 0\n")

    cpu(1000, 500)
    p = tests.Pacer(2, 4, busy_max=0.75, settle=1.0, stat=stat)
    if not (p.may_start(0) and p.may_start(1)):
        fail("the pacer refused a test under its floor")
    cpu(2000, 600)  # the last interval 90% busy
    p.sample_at -= 1
    if p.may_start(2):
        fail("the pacer started a test past its floor on busy CPUs")
    cpu(3000, 1500)  # 10% busy
    p.sample_at -= 1
    p.started()
    if p.may_start(2):
        fail("the pacer started a test past its floor before the last one settled")
    p.last_start -= 2
    if not p.may_start(2) or not p.may_start(3):
        fail("the pacer refused a test past its floor on idle CPUs")
    if p.may_start(4):
        fail("the pacer started a test past its ceiling")
    p.hold(True)
    if p.may_start(2) or not p.may_start(1):
        fail("a held pacer must start tests up to its floor only")
    p.hold(False)
    if not p.may_start(2):
        fail("the pacer stayed held")


def check_bad_input():
    tool = os.path.join(os.path.dirname(HERE), "mutation")
    cases = [(["--files", "no/such/*.cpp"], "matches"), (["--sample", "0"], "at least one"),
             (["--presets", "nope"], "is not one of"), (["--bogus"], ""),
             (["--changed", "no-such-revision"], "not a revision"),
             (["--changed", "HEAD"], "changed since then"),
             (["--mutant-seconds", "0"], "finite and above zero"),
             (["--mutant-seconds", "nan"], "finite and above zero"),
             (["--budget", "nan"], "finite and above zero"),
             (["--rescore", "no/such/dir"], "no report to rescore"),
             (["--rescore", "build", "--sample", "3"], "takes no other option")]
    for argv, words in cases:
        done = subprocess.run([tool, *argv], capture_output=True, text=True, timeout=60)
        if done.returncode != 2 or words not in done.stderr:
            fail(f"ci/mutation {' '.join(argv)}: exit {done.returncode}, want 2 and "
                 f"{words!r}:\n{done.stderr[-500:]}")


def main():
    cxx = sys.argv[1] if len(sys.argv) > 1 else "clang++"
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "orig.cpp")
        with open(path, "w", encoding="utf-8") as f:
            f.write(FIXTURE)
        found = check_sites(path)
        check_schemata(cxx, found, folder)
        check_pruning(cxx, found, folder)
        check_scheduler(folder)
        check_two_passes(folder)
        check_rescore(folder)
        check_pacer(folder)
    check_bad_input()
    print(f"ok: {len(found)} mutants over {len(EXPECTED)} operators")
    return 0


if __name__ == "__main__":
    sys.exit(main())
