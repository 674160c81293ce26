#!/bin/bash
# Simulator speed before and after a change, in one run on one machine: the median of `tlbsim run`'s own
# events/s figure (its stderr line) for each seed's workload at its reproduction size, alternating the binaries.
# usage: scripts/speed_compare.sh BEFORE_TLBSIM AFTER_TLBSIM [REPETITIONS]
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 BEFORE_TLBSIM AFTER_TLBSIM [REPETITIONS]" >&2
  exit 2
fi
before=$1 after=$2 reps=${3:-5}
cases=(
  "000 tlb_flush1 55|--machine skylake-sp-2s28c --kernel linux-5.17 --workload tlb_flush1 --threads 55 --duration 10ms"
  "001 lru_file_mmap_read 128|--machine power9-2s16c-smt4 --kernel linux-4.14-ppc --workload lru_file_mmap_read --threads 128 --warmup 160ms --duration 160ms"
  "002 hackbench 20|--machine milan-36c --kernel linux-6.13 --workload hackbench --threads 20 --duration 10ms"
  "003 idle 32|--machine sandybridge-ep-2s8c2t --kernel linux-3.3 --workload idle --threads 32 --duration 5s"
  "004 context_switch1 768, before|--machine power8-16s192c-smt8 --kernel linux-6.2-ppc --workload context_switch1 --threads 768 --duration 2ms"
  "004 context_switch1 768, after|--machine power8-16s192c-smt8 --kernel linux-6.2-ppc-seed004 --workload context_switch1 --threads 768 --duration 2ms"
)
rate() { "$1" run $2 2>&1 >/dev/null | sed -n 's/.*(\([0-9.]*\) M events\/s).*/\1/p'; }
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
echo "| seed | workload | before M events/s | after M events/s | ratio |"
echo "|---|---|---|---|---|"
for c in "${cases[@]}"; do
  name=${c%%|*} args=${c#*|}
  b=() a=()
  for _ in $(seq "$reps"); do
    b+=("$(rate "$before" "$args")")
    a+=("$(rate "$after" "$args")")
  done
  mb=$(median "${b[@]}") ma=$(median "${a[@]}")
  printf '| %s | %s | %s | %s | %.2f |\n' "${name%% *}" "${name#* }" "$mb" "$ma" "$(echo "$ma / $mb" | bc -l)"
done
