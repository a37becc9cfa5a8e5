#!/usr/bin/env bash
# Measures faultlane-relay with iperf3, in one run, on loopback:
#   1. pass-through throughput through `faultlane-relay --protocol raw`
#      against iperf3 direct, in each direction;
#   2. bandwidth-cap accuracy of `bandwidth dir=down bytes_per_s=...` over
#      a 5 s transfer.
# usage: relay_iperf.sh [path/to/faultlane-relay] [seconds]
set -euo pipefail
relay_bin=${1:-build/release/relays/faultlane-relay}
secs=${2:-5}
command -v iperf3 >/dev/null || { echo "iperf3 missing (ci/bootstrap installs it)"; exit 1; }

pick_port() { echo $(( 20000 + RANDOM % 20000 )); }
server_port=$(pick_port)
iperf3 -s -B 127.0.0.1 -p "$server_port" >/dev/null 2>&1 &
server=$!
relay_pids=()
cleanup() { kill "$server" "${relay_pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
sleep 0.5

start_relay() {  # prints the relay's port
  local log
  log=$(mktemp)
  "$relay_bin" --protocol raw --listen 127.0.0.1:0 --upstream "127.0.0.1:$server_port" "$@" >"$log" 2>&1 &
  relay_pids+=($!)
  for _ in $(seq 1 100); do
    if grep -q 'listening on' "$log"; then
      sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -1
      return
    fi
    sleep 0.05
  done
  echo "relay did not start" >&2
  cat "$log" >&2
  exit 1
}

# Receiver-side throughput in Gbit/s of one iperf3 run (read in Kbit/s for
# precision).
rate() {  # port [iperf3 args...]
  local port=$1
  shift
  iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -f k "$@" | awk '/receiver/ { printf "%.4f", $(NF-2) / 1e6 }'
}

relay_port=$(start_relay)
for dir in up down; do
  flag=""
  [ "$dir" = down ] && flag="-R"
  direct=$(rate "$server_port" $flag)
  via=$(rate "$relay_port" $flag)
  ratio=$(awk -v a="$via" -v b="$direct" 'BEGIN { printf "%.2f", a / b }')
  echo "pass-through $dir: direct ${direct} Gbit/s, via relay ${via} Gbit/s, ratio ${ratio}"
done

cap=100000000  # 100 MB/s
capped_port=$(start_relay --fault "bandwidth dir=down bytes_per_s=$cap")
measured=$(rate "$capped_port" -R)
awk -v m="$measured" -v c="$cap" 'BEGIN {
  bytes = m * 1e9 / 8
  printf "bandwidth cap %d B/s: measured %.0f B/s (%+.1f%%)\n", c, bytes, (bytes - c) * 100 / c
}'
