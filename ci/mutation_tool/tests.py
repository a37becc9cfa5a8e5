"""The tests of a build, run by this tool (not by ctest), so that each
mutant runs only the tests that reach it, with a time limit per test and in
its own process group (a timeout, a cancel or Ctrl-C ends the test and
everything it started)."""
import json
import os
import signal
import subprocess
import threading
import time


class Test:
    def __init__(self, entry):
        props = {p["name"]: p["value"] for p in entry.get("properties", [])}
        self.name = entry["name"]
        self.labels = list(props.get("LABELS", []))
        self.command = entry["command"]
        self.cwd = props.get("WORKING_DIRECTORY", os.getcwd())
        self.env = dict(e.split("=", 1) for e in props.get("ENVIRONMENT", []))
        self.serial = bool(props.get("RUN_SERIAL", False))
        self.disabled = bool(props.get("DISABLED", False))
        self.timeout = float(props.get("TIMEOUT", 600))
        self.seconds = None  # the unmutated build's time, from the trace run
        self.reached = set()  # the switches it reaches, from the trace run
        self.infected = set()  # the watched mutants it infects (schema.watched)


def listed(build_dir):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, capture_output=True,
                         text=True, check=True).stdout
    tests = [Test(e) for e in json.loads(out)["tests"]]
    # `lint` tests read the source text, which a run-time switch never
    # changes (and one of them runs this very tool).
    return [t for t in tests if not t.disabled and t.command and "lint" not in t.labels]


class SerialGate:
    """RUN_SERIAL tests run alone; the others share."""

    def __init__(self):
        self.cond = threading.Condition()
        self.running = 0
        self.alone = False

    def enter(self, serial):
        with self.cond:
            while self.alone or (serial and self.running):
                self.cond.wait()
            self.running += 1
            self.alone = serial

    def leave(self):
        with self.cond:
            self.running -= 1
            self.alone = False
            self.cond.notify_all()


class Pacer:
    """How many tests may run at once: `floor` always, up to `ceiling` while
    the machine's CPUs are mostly idle. Most tests wait on sockets and
    deadlines (a real-time scenario uses a few per cent of a core), so a
    fixed two per core leaves the CPUs idle; a test past the floor starts
    only when the last second was under `busy_max` busy and the test before
    it had a second to load the CPUs, so the load the limits were measured
    under (the trace run is paced the same way) is never exceeded by much."""

    def __init__(self, floor, ceiling, busy_max=0.75, settle=1.0, stat="/proc/stat"):
        self.floor = floor
        self.ceiling = max(floor, ceiling)
        self.busy_max = busy_max
        self.settle = settle
        self.stat = stat
        self.last_start = 0.0
        self.sample = self._read()
        self.sample_at = time.monotonic()
        self.busy = 1.0
        self.holds = 0  # tests that must run at the floor's load (hold())

    def hold(self, on):
        """While held, no test starts past the floor: a test run again
        because it ran out of time runs under the load its limit is from."""
        with _live_lock:
            self.holds += 1 if on else -1

    def _read(self):
        try:
            with open(self.stat, encoding="ascii") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields), idle

    def _update(self, now):
        if now - self.sample_at < 0.5:
            return
        cur = self._read()
        if cur is not None and self.sample is not None and cur[0] > self.sample[0]:
            self.busy = 1.0 - (cur[1] - self.sample[1]) / (cur[0] - self.sample[0])
        self.sample, self.sample_at = cur, now

    def may_start(self, running):
        """Whether one more test may start beside `running` ones. Called by
        one thread only (the scheduler's loop, or paced_map's)."""
        if running < self.floor:
            return True
        if running >= self.ceiling or self.holds > 0:
            return False
        now = time.monotonic()
        if self.sample is None:  # a failed read: try again
            self.sample, self.sample_at = self._read(), now
            return False
        self._update(now)
        if now - self.last_start < self.settle or self.busy > self.busy_max:
            return False
        return True

    def started(self):
        self.last_start = time.monotonic()


def paced_map(fn, items, pacer):
    """fn over items, as many at once as the pacer allows; the results in
    order. An exception in fn ends the map with it, after the running ones."""
    items = list(items)
    results = [None] * len(items)
    errors = []
    cond = threading.Condition()
    running = [0]

    def one(i, x):
        try:
            results[i] = fn(x)
        except Exception as e:  # noqa: BLE001 (re-raised below, in the caller)
            errors.append(e)
        with cond:
            running[0] -= 1
            cond.notify_all()

    workers = []
    with cond:
        for i, x in enumerate(items):
            while not errors and not pacer.may_start(running[0]):
                cond.wait(timeout=0.5)
            if errors:
                break
            running[0] += 1
            pacer.started()
            w = threading.Thread(target=one, args=(i, x), daemon=True)
            w.start()
            workers.append(w)
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return results


GATE = SerialGate()
_live = set()  # process groups running now, for an interrupted run
_live_lock = threading.Lock()


def kill_all():
    with _live_lock:
        for pgid in list(_live):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Cancel:
    """Lets another thread end a test that no longer matters (its mutant was
    killed by another test): `cancel()` kills its process group, and the run
    then reports 'cancelled'."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pid = None
        self.cancelled = False

    def cancel(self):
        with self.lock:
            self.cancelled = True
            if self.pid is not None:
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def run(test, env_extra, limit, cancel=None):
    """Runs one test: ('passed' | 'failed' | 'timeout' | 'cancelled', seconds,
    output tail)."""
    env = dict(os.environ)
    env.update(test.env)
    env.update(env_extra)
    cancel = cancel or Cancel()
    if cancel.cancelled:
        return "cancelled", 0.0, ""
    GATE.enter(test.serial)
    start = time.monotonic()
    out = b""
    try:
        with cancel.lock:
            if cancel.cancelled:
                return "cancelled", 0.0, ""
            p = subprocess.Popen(test.command, cwd=test.cwd, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            cancel.pid = p.pid
        with _live_lock:
            _live.add(p.pid)
        try:
            out, _ = p.communicate(timeout=limit)
            verdict = "passed" if p.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            verdict = "timeout"
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # what the test left running
            except ProcessLookupError:
                pass
            with _live_lock:
                _live.discard(p.pid)
        with cancel.lock:
            cancel.pid = None  # reaped: its group id may be reused
            if cancel.cancelled:
                verdict = "cancelled"
    finally:
        GATE.leave()
    tail = out.decode(errors="replace")[-2000:] if out else ""
    return verdict, time.monotonic() - start, tail
