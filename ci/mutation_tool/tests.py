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
