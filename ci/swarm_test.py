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


def swarm(*args, out, gaps=""):
    """ci/swarm with a gaps file of `gaps` (none by default)."""
    gaps_file = Path(tempfile.mkdtemp()) / "gaps.txt"
    gaps_file.write_text(gaps)
    proc = subprocess.run([sys.executable, str(ROOT / "ci/swarm"), "--sim", SIM, "--jobs", "2",
                           "--gaps", str(gaps_file), "--out", str(out), *map(str, args)],
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

    def test_a_listed_gap_is_set_apart_and_a_reached_one_fails(self):
        text = (LIBRARY / "half_closed_idle_lane.yaml").read_text()
        planted = re.sub(r"    faults:\n      - \{type: half_close[^\n]*\n", "", text)
        planted = re.sub(r"expect:\n(  .*\n)+", "", planted)
        file = self.dir / "half_closed_idle_lane.yaml"
        file.write_text(planted)
        gaps = "# why each is not reached\nidle_lane_found_closed no half-close here\nrelay_half_closed the same\n"
        code, out = swarm(file, "--seeds", "1..2", "--expected-only", out=self.dir / "a", gaps=gaps)
        self.assertEqual(code, 0, out)
        self.assertIn("known gaps, not failing (2; gaps.txt says why): idle_lane_found_closed, relay_half_closed", out)
        # The library's file reaches them: a gap reached fails until it leaves the list.
        code, out = swarm(LIBRARY / "half_closed_idle_lane.yaml", "--seeds", "1..2", "--expected-only",
                          out=self.dir / "b", gaps=gaps)
        self.assertEqual(code, 1, out)
        self.assertIn("REACHED, yet listed as gaps (2): idle_lane_found_closed, relay_half_closed", out)

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
        # No probe of the table expects a real-time-only file today: a copy of
        # one (its latency bounds make the world refuse it) under the name of
        # the file the rpc probes expect stands in.
        file = self.dir / "control_queue_full.yaml"
        file.write_text((LIBRARY / "ping_while_pool_saturated.yaml").read_text())
        code, out = swarm(file, "--seeds", "1..1", "--expected-only", out=self.dir / "out")
        self.assertEqual(code, 0, out)
        self.assertIn("real time only: the world refuses it", out)
        self.assertRegex(out, r"not checked here, expected in a real-time-only file \(\d+\): .*rpc_queue_full")
        self.assertNotIn("NEVER REACHED", out)

    def test_a_swarm_keeps_no_runs_history(self):
        # Each seed's history holds its region's final bytes (32 MiB here).
        # When every run's was kept, 24 seeds peaked 0.9 GiB above 2 (and a
        # 200-seed swarm of swarm.yaml ran out of memory). Counted in bytes,
        # not seconds: 24 seeds stay within 12 regions of 2 seeds' peak
        # (ASan sets up to 256 MiB of freed memory aside before reusing it).
        text = (LIBRARY / "half_closed_idle_lane.yaml").read_text()
        big = text.replace("size: 256KiB", "size: 32MiB").replace("count: 40", "count: 4")
        self.assertNotEqual(big, text)
        file = self.dir / "big_region.yaml"
        file.write_text(big)

        def peak_kib(seeds):
            probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], "
                     "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                     "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
            out = subprocess.run([sys.executable, "-c", probe, SIM, "swarm", "--deterministic",
                                  str(file), "--seeds", seeds], capture_output=True, text=True,
                                 timeout=240)
            return int(out.stdout.strip())

        two, many = peak_kib("1..2"), peak_kib("1..24")
        self.assertLess(many - two, 12 * 32 * 1024, f"peak {two} KiB for 2 seeds, {many} for 24")

    def test_bad_arguments_exit_2_before_anything_runs(self):
        for args, says in [
            (["--seeds", "5..1", LIBRARY / "swarm.yaml"], "want A..B"),
            (["--seeds", "1..2", self.dir / "none.yaml"], "no such file"),
            (["--seeds", "1..2", "--jobs", "0", LIBRARY / "swarm.yaml"], "--jobs"),
            (["--seeds", "1..2", "--jobs", "65", LIBRARY / "swarm.yaml"], "want 1 to 64"),
        ]:
            code, out = swarm(*args, out=self.dir / "bad")
            self.assertEqual(code, 2, out)
            self.assertIn(says, out)
            self.assertFalse((self.dir / "bad").exists(), out)
        for gaps, says in [("no_such_probe because\n", "no_such_probe: no such probe"),
                           ("ambiguous_write\n", "ambiguous_write: a gap needs its reason")]:
            code, out = swarm("--seeds", "1..2", LIBRARY / "swarm.yaml", out=self.dir / "bad",
                              gaps=gaps)
            self.assertEqual(code, 2, out)
            self.assertIn(says, out)
            self.assertFalse((self.dir / "bad").exists(), out)


if __name__ == "__main__":
    SIM = sys.argv.pop(1)
    unittest.main()
