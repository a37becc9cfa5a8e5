#!/usr/bin/env bash
# Runs faultlane-bench --verify over a sweep of block sizes and operations;
# fails on any failed operation or mismatched byte.
#
# Blocks of 1 MiB and more get 2 s: a batch of four 3 MiB WRITEs under
# ThreadSanitizer on a loaded machine can outlast 0.3 s, and a run that
# measured no operation fails (exit 1) before it verified anything.
set -euo pipefail
bench=$1
for op in read write mix; do
  for size in 1 4095 4K 64K 1M 3M; do
    duration=0.3
    case $size in 1M | 3M) duration=2 ;; esac
    "$bench" --op "$op" --block-size "$size" --batch 4 --threads 2 --workers 2 --lanes 3 \
      --duration "$duration" --rounds 1 --warmup 0 --verify --no-baseline | tail -1
  done
done
echo "verify sweep: all block sizes matched"
