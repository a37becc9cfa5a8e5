#!/usr/bin/env bash
# faultlane-bench's command line: every bad flag is one clear line and exit
# 2; a run that measured nothing exits 1 with its failures by status; JSON
# ratios are null without a baseline; --verify verifies the baseline too.
set -uo pipefail
bench=$1
sanitizer=${2:-none}  # the build's FAULTLANE_SANITIZER
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# expect_bad ARGS... -- TEXT: exit 2 and TEXT in the output.
expect_bad() {
  local args=() text
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  text=$2
  out=$("$bench" "${args[@]}" 2>&1)
  rc=$?
  [ $rc -eq 2 ] || fail "${args[*]}: exit $rc, not 2: $out"
  grep -qF -- "$text" <<<"$out" || fail "${args[*]}: no '$text' in: $out"
  [ "$(wc -l <<<"$out")" -eq 1 ] || fail "${args[*]}: not one line: $out"
}
expect_bad --bogus 1 -- "unknown flag or argument: --bogus 1"
expect_bad --block-size 2X -- "'2X' is not a whole number from 1 to"
expect_bad --block-size 0 -- "'0' is not a whole number from 1 to"
expect_bad --batch -1 -- "'-1' is not a whole number from 1 to"
expect_bad --workers 99 -- "from 1 to 32"
expect_bad --duration nan -- "'nan' is not a number of seconds above 0"
expect_bad --duration 0 -- "'0' is not a number of seconds above 0"
expect_bad --warmup -1 -- "'-1' is not 0 to"
expect_bad --op jump -- "jump not in {read,write,mix}"
expect_bad --rails 2 -- "--rails must not exceed --lanes"
expect_bad --via-relay --rpc -- "--via-relay excludes --rpc"
expect_bad --relay-busy-poll-us 50 -- "--relay-busy-poll-us requires --via-relay"
expect_bad --via-relay --relay-busy-poll-us 10001 -- "from 0 to 10000"
expect_bad --mode initiator -- "needs --peer, --registration and --incarnation"
expect_bad --lanes -- "--lanes"
"$bench" --version | grep -q "^faultlane-bench " || fail "--version"
"$bench" --help | grep -q -- "--progress-timeout-ms" || fail "--help lists --progress-timeout-ms"

# 2G is a size (and too large for a transfer: the range says so).
expect_bad --block-size 2G -- "'2G' is not a whole number from 1 to 1073741824"
"$bench" --block-size 1M --batch 1 --duration 0.2 --rounds 1 --warmup 0 --no-baseline \
  >/dev/null || fail "--block-size 1M runs"

# Nothing measured: every op failed (no target there), exit 1, by status.
out=$("$bench" --mode initiator --peer 127.0.0.1:9 --registration 1 --incarnation 1 \
  --duration 0.2 --rounds 1 --json "$tmp/none.json" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "a run with 0 ops exited $rc"
grep -q "failed [0-9]* (connection_failed [0-9]*)" <<<"$out" || fail "no breakdown: $out"
grep -q "measured 0 operations" <<<"$out" || fail "no 0-ops message: $out"
grep -q '"failures_by_status": {"connection_failed": ' "$tmp/none.json" || fail "JSON breakdown"

# No baseline: ratios are null, not 0.
"$bench" --block-size 4K --duration 0.2 --rounds 1 --warmup 0 --no-baseline \
  --json "$tmp/alone.json" >/dev/null || fail "--no-baseline run"
grep -q '"ratio_bytes_per_s": null, "ratio_mean_latency": null' "$tmp/alone.json" ||
  fail "ratios not null: $(cat "$tmp/alone.json")"

# Bulk blocks: both streams run, each with its ratio (the block stream
# through buffers the block's size); below 1 MiB neither does.
out=$("$bench" --block-size 2M --batch 1 --duration 0.2 --rounds 1 --warmup 0 \
  --json "$tmp/bulk.json") || fail "bulk run"
grep -q "tcp stream .*from and into 512 KiB buffers" <<<"$out" || fail "no stream line: $out"
grep -q "block strm .*through 2 MiB buffers" <<<"$out" || fail "no block stream line: $out"
grep -Eq '"block_stream_bytes_per_s": [0-9]+, "ratio_block_stream_bytes_per_s": [0-9.]+' \
  "$tmp/bulk.json" || fail "block stream JSON: $(cat "$tmp/bulk.json")"

# --verify: the baseline moves patterned bytes and checks them as well.
out=$("$bench" --op mix --block-size 64K --batch 4 --duration 0.2 --rounds 1 --warmup 0 \
  --verify --json "$tmp/verify.json")
grep -q "mismatches 0 (baseline, verified too: 0)" <<<"$out" || fail "verify line: $out"
grep -q '"baseline_mismatches": 0' "$tmp/verify.json" || fail "verify JSON"
grep -q '"block_stream_bytes_per_s": null' "$tmp/verify.json" || fail "a 64K run measured a stream"

# --raw-wait ready: the baseline waits in poll, then receives without
# blocking; its row and JSON say so, and its bytes verify (64 KiB answers
# come in pieces, each after a wait of its own). It goes only where the
# raw baseline runs.
expect_bad --raw-wait spin -- "--raw-wait: spin not in {block,ready}"
expect_bad --raw-wait ready --via-relay -- "--raw-wait excludes --via-relay"
expect_bad --raw-wait ready --no-baseline -- "--no-baseline excludes --raw-wait"
expect_bad --raw-wait ready --mode target -- "not to --mode target|initiator, --rpc"
expect_bad --raw-wait block --rpc -- "not to --mode target|initiator, --rpc"
expect_bad --raw-wait block --no-baseline -- "--no-baseline excludes --raw-wait"
out=$("$bench" --op mix --block-size 64K --batch 4 --duration 0.2 --rounds 1 --warmup 0 \
  --verify --raw-wait ready --json "$tmp/ready.json") || fail "ready run exited $?: $out"
# The ready baseline moved bytes (a receive that failed at once would end
# it with nothing measured and no mismatch).
grep -Eq '"baseline": \{"bytes_per_s": [1-9]' "$tmp/ready.json" ||
  fail "ready baseline measured nothing: $(cat "$tmp/ready.json")"
grep -q " raw-wait=ready verify$" <<<"$out" || fail "ready: no raw-wait in the config line: $out"
grep -q "^  raw ready " <<<"$out" || fail "ready: no 'raw ready' row: $out"
grep -q "mismatches 0 (baseline, verified too: 0)" <<<"$out" || fail "ready verify: $out"
grep -q '"raw_wait": "ready"}' "$tmp/ready.json" || fail "ready JSON: $(cat "$tmp/ready.json")"
grep -q '"raw_wait": "block"}' "$tmp/verify.json" || fail "block JSON: $(cat "$tmp/verify.json")"

# The steady state allocates nothing (docs/architecture.md, "Memory in the
# steady state"): single-frame READs, WRITEs and a mix make no allocation
# in the measured window (the bench reserves its own latency log); batches
# of 32 over two lanes at most one per batch. Counted in every preset but
# asan, whose builds pass the pool through to the heap.
per_op() { grep -o '"allocations_per_op": [0-9.]*' "$1" | head -1 | awk '{print $2}'; }
at_most() { awk -v v="$1" -v most="$2" 'BEGIN { exit !(v != "" && v + 0 <= most + 0) }'; }
allocation_ops=(read write mix)
[ "$sanitizer" = address ] && allocation_ops=()
for op in "${allocation_ops[@]}"; do
  "$bench" --op $op --block-size 4K --batch 1 --duration 0.5 --rounds 1 --warmup 0.2 \
    --no-baseline --json "$tmp/alloc.json" >/dev/null || fail "allocation run, $op"
  n=$(per_op "$tmp/alloc.json")
  at_most "$n" 0.0005 || fail "$op, batch 1: '$n' allocations per op, not 0"
done
if [ "$sanitizer" != address ]; then
  "$bench" --op mix --block-size 4K --batch 32 --lanes 2 --duration 0.5 --rounds 1 \
    --warmup 0.2 --no-baseline --json "$tmp/alloc.json" >/dev/null ||
    fail "allocation run, batch 32"
  n=$(per_op "$tmp/alloc.json")
  at_most "$n" 0.03125 || fail "batch 32: '$n' allocations per op, above one per batch"
  # Busy-polling io threads keep Asio's handler memory as well.
  "$bench" --op read --block-size 4K --batch 1 --busy-poll-us 20 --duration 0.5 --rounds 1 \
    --warmup 0.2 --no-baseline --json "$tmp/alloc.json" >/dev/null ||
    fail "allocation run, busy polling"
  n=$(per_op "$tmp/alloc.json")
  # Looser than the runs above (four polling threads on a loaded machine
  # make few operations); the defect it guards against made 2 per op.
  at_most "$n" 0.005 || fail "busy polling: '$n' allocations per op, not 0"
  # So does a polling relay (the count is the process's, relay included).
  "$bench" --op read --block-size 4K --batch 1 --via-relay --relay-busy-poll-us 100 \
    --duration 0.5 --rounds 1 --warmup 0.2 --no-baseline --json "$tmp/alloc.json" >/dev/null ||
    fail "allocation run, polling relay"
  grep -q '"relay_busy_poll_us": 100,' "$tmp/alloc.json" || fail "JSON: $(cat "$tmp/alloc.json")"
  n=$(per_op "$tmp/alloc.json")
  at_most "$n" 0.005 || fail "polling relay: '$n' allocations per op, not 0"
fi

# --batch's default: 32, or as many blocks as fit in 64 MiB when fewer do
# (2 MiB blocks: 32; one byte more: 31; 64 MiB: 1); a given --batch stays.
batch_of() {  # flags...: the batch the config line reports
  "$bench" "$@" --duration 0.05 --rounds 1 --warmup 0 --no-baseline 2>&1 |
    sed -nE 's/^faultlane-bench: .* batch=([0-9]+) .*/\1/p'
}
[ "$(batch_of --block-size 4K)" = 32 ] || fail "default batch of 4K blocks"
[ "$(batch_of --block-size 2M)" = 32 ] || fail "default batch of 2M blocks"
[ "$(batch_of --block-size 2097153)" = 31 ] || fail "default batch of 2M + 1 blocks"
[ "$(batch_of --block-size 64M)" = 1 ] || fail "default batch of 64M blocks"
[ "$(batch_of --block-size 64M --batch 2)" = 2 ] || fail "a given --batch"

# An op counts when it completes inside the window, whenever it started: a
# batch that outlasts a window starting at the first completion still has
# ops landing in it, and they count (counted by launch, a batch begun in the
# warm-up added nothing, and 2 GiB batches measured 0). The ops are 1 MiB,
# so that many land in any window (eight 64 MiB READs in a 0.1 s window
# once saw none land under ASan on a loaded machine), and each build's batch
# holds several times what its loopback moves in its window: 512 MiB in
# 0.02 s without a sanitizer and in 0.05 s under ASan, 256 MiB in 0.05 s
# under TSan (here 50-91, 92-161 and 65-76 ops landed; under TSan 256 MiB
# in 0.5 s once landed whole, and the premise check below said so).
case $sanitizer in
  thread) long_batch=(--block-size 1M --batch 256 --duration 0.05) ;;
  address) long_batch=(--block-size 1M --batch 512 --duration 0.05) ;;
  *) long_batch=(--block-size 1M --batch 512 --duration 0.02) ;;
esac
out=$("$bench" "${long_batch[@]}" --rounds 1 --warmup 0 --no-baseline 2>&1)
grep -Eq "^  ops [1-9][0-9]*, failed 0" <<<"$out" || fail "a batch longer than the window: $out"
# The premise: fewer ops landed than the batch holds, so it outlasted the window.
landed=$(sed -nE 's/^  ops ([0-9]+), failed 0.*/\1/p' <<<"$out")
[ -n "$landed" ] && [ "$landed" -lt "${long_batch[3]}" ] ||
  fail "the batch did not outlast the window (${landed:-no} ops of ${long_batch[3]}): $out"
# A window in which nothing can complete (64 MiB cannot move in 1 ms) says
# why, and the run exits 1 as one that measured nothing.
out=$("$bench" --block-size 64M --duration 0.001 --rounds 1 --warmup 0 --no-baseline 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "an empty window exited $rc"
grep -Eq "round 1/1: no operation completed in its 0\.0[0-9] s window \(64 MiB in flight per thread\)" \
  <<<"$out" || fail "no reason for an empty window: $out"
# Every run with a baseline gives the spread of its rounds' ratios.
out=$("$bench" --block-size 4K --duration 0.2 --rounds 2 --warmup 0 --json "$tmp/rounds.json")
grep -Eq "^  rounds     2: throughput ratio median [0-9.]+, [0-9.]+ to [0-9.]+; mean latency" \
  <<<"$out" || fail "no rounds line: $out"
grep -Eq '"round_ratios_bytes_per_s": \[[0-9.]+, [0-9.]+\]' "$tmp/rounds.json" ||
  fail "rounds JSON: $(cat "$tmp/rounds.json")"

# --sweep: its lists and what it excludes, then a small grid whose JSON and
# SVG hold every point that ran and name the one skipped.
expect_bad --sweep --workers 2 -- "--workers excludes --sweep"
expect_bad --sweep --block-size 4K -- "--block-size excludes --sweep"
expect_bad --sweep --via-relay -- "excludes"
expect_bad --sweep-lanes 2 -- "--sweep-lanes requires --sweep"
expect_bad --svg x.svg -- "--svg requires --sweep"
expect_bad --sweep --sweep-lanes 1,x -- "'x' in '1,x' is not a whole number from 1 to"
expect_bad --sweep --sweep-workers 1,99 -- "'99' in '1,99' is not a whole number from 1 to 32"
expect_bad --sweep --sweep-lanes 2,2 -- "'2,2' lists 2 twice"
expect_bad --sweep --sweep-lanes 1 --sweep-rails 2 -- "every point has more rails than lanes"
out=$("$bench" --sweep --sweep-workers 1,2 --sweep-lanes 1,2 --sweep-rails 1,2 \
  --sweep-block-sizes 4K --batch 4 --duration 0.1 --rounds 1 --warmup 0 \
  --json "$tmp/sweep.json" --svg "$tmp/sweep.svg")
rc=$?
[ $rc -eq 0 ] || fail "sweep exited $rc: $out"
[ "$(grep -c "^  block " <<<"$out")" -eq 6 ] || fail "sweep: not 6 point lines: $out"
grep -q "skipped 2 points with more rails than lanes" <<<"$out" || fail "sweep: skips: $out"
[ "$(grep -c '"config": {' "$tmp/sweep.json")" -eq 6 ] || fail "sweep JSON: not 6 points"
grep -q '"why": "more rails than lanes"' "$tmp/sweep.json" || fail "sweep JSON: no skip"
grep -q '"raw_wait": "block"' "$tmp/sweep.json" || fail "sweep JSON: no raw_wait"
# Two points ran on 2 rails (lanes 2, workers 1 and 2) and two were skipped (lanes 1).
[ "$(grep -c '"rails": 2,' "$tmp/sweep.json")" -eq 4 ] || fail "sweep JSON: rails 2 not 2 + 2"
head -c 4 "$tmp/sweep.svg" | grep -q "<svg" || fail "sweep SVG does not start with <svg"
[ "$(tail -n 1 "$tmp/sweep.svg")" = "</svg>" ] || fail "sweep SVG does not end with </svg>"
# Three lanes x rails settings, faultlane and raw tcp, in a throughput and a p99 panel.
[ "$(grep -o "<polyline" "$tmp/sweep.svg" | wc -l)" -eq 12 ] || fail "sweep SVG: not 12 lines"

[ "$failed" -eq 0 ] && echo "bench cli: every check passed"
exit "$failed"
