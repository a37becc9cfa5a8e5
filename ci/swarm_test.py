#!/usr/bin/env python3
"""ci/swarm's own test (ctest ci_swarm_selftest, dsim preset).

Each rule of ci/swarm, shown on the world build's faultlane-sim: a
failing seed fails the stage with its replay line and shrunk file; a probe
no run reached fails it by name, and a file that reaches it passes; a
real-time-only file is refused by the world and its probes set apart; bad
arguments exit 2 before anything runs.

Usage: swarm_test.py FAULTLANE_SIM (the dsim build's binary)
"""
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "sim/scenarios"
SIM = None


def swarm(*args, out):
    proc = subprocess.run([sys.executable, str(ROOT / "ci/swarm"), "--sim", SIM, "--jobs", "2",
                           "--out", str(out), *map(str, args)],
                          capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stdout + proc.stderr


class CiSwarm(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_file_that_reaches_its_probes_passes(self):
        code, text = swarm(LIBRARY / "half_closed_idle_lane.yaml", "--seeds", "1..2",
                           "--expected-only", out=self.dir)
        self.assertEqual(code, 0, text)
        self.assertRegex(text, r"half_closed_idle_lane\s+2\s+0\s")
        self.assertNotIn("NEVER REACHED", text)

    def test_a_probe_no_run_reached_fails_by_name(self):
        # The same file without its half-close: the idle lane is never found
        # closed nor the relay half-closed, and the probes expected there
        # are named.
        text = (LIBRARY / "half_closed_idle_lane.yaml").read_text()
        planted = re.sub(r"    faults:\n      - \{type: half_close[^\n]*\n", "", text)
        planted = re.sub(r"expect:\n(  .*\n)+", "", planted)
        self.assertNotEqual(planted, text)
        file = self.dir / "half_closed_idle_lane.yaml"
        file.write_text(planted)
        code, out = swarm(file, "--seeds", "1..2", "--expected-only", out=self.dir / "out")
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"NEVER REACHED \(2\): idle_lane_found_closed, relay_half_closed\n")

    def test_without_expected_only_every_probe_is_owed(self):
        code, out = swarm(LIBRARY / "half_closed_idle_lane.yaml", "--seeds", "1..1", out=self.dir)
        self.assertEqual(code, 1, out)
        never = out.split("NEVER REACHED")[1]
        self.assertIn("lane_handler_threw,", never)  # expected in throwing_handler
        self.assertNotIn("idle_lane_found_closed", never)

    def test_a_failing_seed_fails_with_its_replay_line_and_shrunk_file(self):
        file = self.dir / "planted.yaml"
        file.write_text((ROOT / "sim/tests/planted_replay.yaml").read_text())
        out_dir = self.dir / "out"
        code, out = swarm(file, "--seeds", "4..4", "--expected-only", out=out_dir)
        self.assertEqual(code, 1, out)
        self.assertIn("FAILED planted seed 4: FAIL no_replay", out)
        self.assertIn(f"replay: ", out)
        self.assertIn(str(out_dir / "planted.seed4.yaml"), out)
        self.assertIn(f"shrunk: {out_dir / 'planted.seed4.min.yaml'}", out)
        self.assertTrue((out_dir / "planted.seed4.min.yaml").exists())
        self.assertIn("FAILED seeds in: planted", out)

    def test_a_real_time_only_file_is_set_apart_with_its_probes(self):
        code, out = swarm(LIBRARY / "ping_while_pool_saturated.yaml", "--seeds", "1..1",
                          "--expected-only", out=self.dir)
        self.assertEqual(code, 0, out)
        self.assertIn("real time only: the world refuses it", out)
        self.assertRegex(out, r"not checked here, expected in a real-time-only file \(\d+\): .*rpc_queue_full")

    def test_bad_arguments_exit_2_before_anything_runs(self):
        for args, says in [
            (["--seeds", "5..1", LIBRARY / "swarm.yaml"], "want A..B"),
            (["--seeds", "1..2", self.dir / "none.yaml"], "no such file"),
            (["--seeds", "1..2", "--jobs", "0", LIBRARY / "swarm.yaml"], "--jobs"),
        ]:
            code, out = swarm(*args, out=self.dir / "bad")
            self.assertEqual(code, 2, out)
            self.assertIn(says, out)
            self.assertFalse((self.dir / "bad").exists(), out)


if __name__ == "__main__":
    SIM = sys.argv.pop(1)
    unittest.main()
