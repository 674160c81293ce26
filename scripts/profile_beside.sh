#!/bin/bash
# A real kernel's perf profile of a native workload beside tlbsim's simulated profile of the same workload, both
# in microseconds of CPU time per operation, by function (perf report --children): which functions account for a
# gap in ops/s. Runs on a Linux host with `perf` (Debian's linux-perf) and permission to sample the kernel (root,
# or kernel.perf_event_paranoid <= 1). The real side samples `tlbsim validate`'s native run with the cpu-clock
# event (a guest has no PMU), 1,000 samples a second with call graphs; the simulated side is `tlbsim run
# --profile` on the given machine file (calibrate this host first: `tlbsim calibrate --out host.toml`).
#
# usage: scripts/profile_beside.sh TLBSIM MACHINE KERNEL WORKLOAD [THREADS] [SECONDS] [ROWS]
#
# Per op, real: a function's children share x THREADS CPUs x 1e6 / ops/s (every sample is taken to be the
# native loop's, and each thread's CPU busy throughout: true of the pinned will-it-scale loops, whose
# one-thread runs put over 99% of the samples in the loop; the native run's setup and the 100 us simulation
# that validate adds are the rest). Per op, simulated: the share x the profile's total CPU time / ops.
set -euo pipefail
if [[ $# -lt 4 ]]; then
  echo "usage: $0 TLBSIM MACHINE KERNEL WORKLOAD [THREADS] [SECONDS] [ROWS]" >&2
  exit 2
fi
tlbsim=$1 machine=$2 kernel=$3 workload=$4 threads=${5:-1} seconds=${6:-5} rows=${7:-40}
command -v perf >/dev/null || { echo "$0: perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Real: the native loop under perf; validate's table row gives the real ops/s (its first figure column).
perf record -q -e cpu-clock -F 1000 -g -o "$dir/perf.data" -- "$tlbsim" validate --machine "$machine" \
  --kernel "$kernel" --workloads "$workload" --threads "$threads" --seconds "$seconds" --sim-duration 100us \
  >"$dir/validate.txt" 2>/dev/null
real_ops=$(awk -v w="$workload" -v t="$threads" '$1 == w && $2 == t { print $4; exit }' "$dir/validate.txt")
[[ -n "$real_ops" ]] || { echo "$0: no $workload row in tlbsim validate's output" >&2; exit 1; }
perf report -i "$dir/perf.data" --children --stdio -g none --sort sym --percent-limit 0.3 2>/dev/null |
  awk -v n="$threads" -v ops="$real_ops" '/^ *[0-9.]+%/ {
      c = $1; sub(/%/, "", c); s = $2; sub(/%/, "", s); f = $NF; sub(/.*::/, "", f)
      if (!(f in seen)) { seen[f] = 1; printf "%s %.3f %.3f\n", f, c / 100 * n * 1e6 / ops, s / 100 * n * 1e6 / ops }
    }' >"$dir/real.txt"

# Simulated: the same workload for 20 ms on the machine file.
"$tlbsim" run --machine "$machine" --kernel "$kernel" --workload "$workload" --threads "$threads" \
  --duration 20ms --profile >"$dir/sim.txt" 2>/dev/null
sim_ops=$(awk '$1 == "ops_per_sec" { print $2; exit }' "$dir/sim.txt")
cpu_ms=$(sed -n 's/^profile: \([0-9.]*\) ms of simulated CPU time.*/\1/p' "$dir/sim.txt")
awk -v ops="$sim_ops" -v ms="$cpu_ms" 'f && /^ *[0-9.]+%/ {
    c = $1; sub(/%/, "", c); s = $2; sub(/%/, "", s); $1 = ""; $2 = ""; sub(/^ +/, ""); gsub(/ /, "_")
    if ($0 == "[idle]" || $0 == "idle_loop" || $0 == "task_main" || $0 ~ /^poll:/) next  # the idle CPUs
    per = ms / 1000 / (ops * 0.020)
    printf "%s %.3f %.3f\n", $0, c / 100 * per * 1e6, s / 100 * per * 1e6
  } /^  Children/ { f = 1 }' "$dir/sim.txt" >"$dir/simrows.txt"

echo "$workload, $threads thread(s): real $real_ops ops/s ($(awk -v o="$real_ops" -v n="$threads" \
  'BEGIN { printf "%.3f", n * 1e6 / o }') us of CPU an op); simulated on $machine, $kernel: $sim_ops ops/s" \
  "($(awk -v o="$sim_ops" -v n="$threads" 'BEGIN { printf "%.3f", n * 1e6 / o }') us of CPU an op; idle CPUs' rows left" \
  "out)"
echo
echo "| function | real us/op (children) | real self | simulated us/op (children) | simulated self |"
echo "|---|---:|---:|---:|---:|"
# The union of both sides' rows, in order of the larger per-op time, each side's "-" where it has no such function.
awk 'FNR == NR { r[$1] = $2; rs[$1] = $3; next } { s[$1] = $2; ss[$1] = $3 }
  END {
    for (f in r) k[f] = r[f]; for (f in s) if (!(f in k) || s[f] > k[f]) k[f] = s[f]
    for (f in k) printf "%s %s %s %s %s %s\n", k[f], f, (f in r) ? r[f] : "-", (f in r) ? rs[f] : "-",
                        (f in s) ? s[f] : "-", (f in s) ? ss[f] : "-"
  }' "$dir/real.txt" "$dir/simrows.txt" | sort -g -r | head -n "$rows" |
  awk '{ printf "| `%s` | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6 }'
