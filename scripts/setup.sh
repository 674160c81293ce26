#!/usr/bin/env bash
# Installs the Debian packages tlbsim needs, only those missing; prints nothing when all are present.
# Everything comes from Debian's archive: nothing is downloaded from anywhere else.
set -euo pipefail

packages=(g++ cmake ninja-build libgtest-dev libbenchmark-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
          libfmt-dev clang libclang-rt-14-dev chromium)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
