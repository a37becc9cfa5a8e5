#!/usr/bin/env bash
# Measures faultlane-relay with iperf3, in one run, on loopback:
#   1. pass-through throughput through `faultlane-relay --protocol raw`, its
#      HTTP API running (--api), against iperf3 direct, in each direction,
#      interleaved: direct, relay, direct, relay... `rounds` times each;
#   2. bandwidth-cap accuracy of `bandwidth dir=down bytes_per_s=...` over
#      a transfer of `seconds`.
# Everything it starts is stopped on any exit; a relay or iperf3 server
# that dies fails the run with its log.
# usage: relay_iperf.sh [path/to/faultlane-relay] [seconds] [rounds]
set -euo pipefail
relay_bin=${1:-build/release/relays/faultlane-relay}
secs=${2:-5}
rounds=${3:-2}
command -v iperf3 >/dev/null || { echo "iperf3 missing (ci/bootstrap installs it)" >&2; exit 1; }
[ -x "$relay_bin" ] || { echo "no relay program at $relay_bin (build the release preset)" >&2; exit 1; }

workdir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$workdir"
}
trap cleanup EXIT

die() {
  echo "relay_iperf: $*" >&2
  for log in "$workdir"/*.log; do
    [ -s "$log" ] && { echo "--- $log" >&2; tail -20 "$log" >&2; }
  done
  exit 1
}

# Waits until `pid` prints a line matching `pattern` into `log`; dies if it
# exits first or 10 s pass. Prints the match.
wait_for_line() {  # pid log pattern
  local deadline=$((SECONDS + 10))
  while ((SECONDS < deadline)); do
    if grep -q "$3" "$2"; then grep -m1 "$3" "$2"; return; fi
    kill -0 "$1" 2>/dev/null || die "process $1 exited before printing '$3'"
    sleep 0.05
  done
  die "process $1 did not print '$3' within 10 s"
}

# An iperf3 server on a free port: a port somebody else holds makes iperf3
# exit at once, and the next candidate is tried. Sets server_port.
start_iperf_server() {
  local try port log pid
  for try in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 20000))
    log="$workdir/iperf3-server-$port.log"
    iperf3 -s -B 127.0.0.1 -p "$port" --forceflush >"$log" 2>&1 &
    pid=$!
    local deadline=$((SECONDS + 5))
    while ((SECONDS < deadline)); do
      if grep -q "Server listening" "$log"; then
        pids+=("$pid")
        server_pid=$pid
        server_port=$port
        return
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  die "no iperf3 server would start (10 ports tried)"
}

# A relay in front of the iperf3 server; sets relay_pid and relay_port.
start_relay() {  # name [relay flags...]
  local name=$1
  shift
  local log="$workdir/relay-$name.log"
  "$relay_bin" --name "$name" --protocol raw --listen 127.0.0.1:0 \
    --upstream "127.0.0.1:$server_port" "$@" >"$log" 2>&1 &
  relay_pid=$!
  pids+=("$relay_pid")
  local line
  line=$(wait_for_line "$relay_pid" "$log" 'listening on')
  relay_port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' <<<"$line")
}

alive() {  # pid what
  kill -0 "$1" 2>/dev/null || die "$2 died"
}

# Receiver-side throughput in Gbit/s of one iperf3 run (read in Kbit/s for
# precision).
rate() {  # port [iperf3 args...]
  local port=$1 out
  shift
  out=$(iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -f k "$@" 2>&1) || die "iperf3 -c :$port failed: $out"
  awk '/receiver/ { printf "%.4f", $(NF-2) / 1e6 }' <<<"$out"
}

start_iperf_server
start_relay pass --api 127.0.0.1:0
pass_pid=$relay_pid
pass_port=$relay_port
for dir in up down; do
  flag=""
  [ "$dir" = down ] && flag="-R"
  for round in $(seq 1 "$rounds"); do
    alive "$server_pid" "the iperf3 server"
    direct=$(rate "$server_port" $flag)
    alive "$pass_pid" "the relay"
    via=$(rate "$pass_port" $flag)
    alive "$pass_pid" "the relay"
    ratio=$(awk -v a="$via" -v b="$direct" 'BEGIN { printf "%.2f", a / b }')
    echo "pass-through $dir (round $round): direct ${direct} Gbit/s, via relay ${via} Gbit/s, ratio ${ratio}"
  done
done

cap=100000000  # 100 MB/s
start_relay capped --fault "bandwidth dir=down bytes_per_s=$cap"
measured=$(rate "$relay_port" -R)
alive "$relay_pid" "the capped relay"
awk -v m="$measured" -v c="$cap" 'BEGIN {
  bytes = m * 1e9 / 8
  printf "bandwidth cap %d B/s: measured %.0f B/s (%+.1f%%)\n", c, bytes, (bytes - c) * 100 / c
}'
