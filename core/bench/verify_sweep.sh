#!/usr/bin/env bash
# Runs faultlane-bench --verify over a sweep of block sizes and operations;
# fails on any failed operation or mismatched byte.
set -euo pipefail
bench=$1
for op in read write mix; do
  for size in 1 4095 4K 64K 1M 3M; do
    "$bench" --op "$op" --block-size "$size" --batch 4 --threads 2 --workers 2 --lanes 3 \
      --duration 0.3 --rounds 1 --warmup 0 --verify --no-baseline | tail -1
  done
done
echo "verify sweep: all block sizes matched"
