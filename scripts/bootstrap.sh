#!/usr/bin/env bash
# Installs whatever claimsched needs that this Debian 12 machine lacks (run as
# root). Packages already present are left alone; nothing is downloaded
# outside Debian's mirror.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  # The linker: five times faster than GNU ld on the test binaries.
  lld
  libcaf-dev protobuf-compiler libprotobuf-dev librocksdb-dev
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libtomlplusplus-dev nlohmann-json3-dev libcpp-httplib-dev
  # claimsched replay reads gzip traces.
  zlib1g-dev
  python3 procps
  # HA members elect partition owners in etcd; the suite starts throwaway
  # etcd members on loopback (and its short chaos run needs three).
  etcd-server etcd-client
  # The fuzz targets (tests/fuzz): clang with libFuzzer and the sanitizers' runtimes.
  clang-14 libclang-rt-14-dev
  # scripts/replay-plot.sh draws the replay report's PNGs (no X11 needed).
  gnuplot-nox
  # The dashboard's browser test (tests/browser): Debian's headless Chromium,
  # driven over WebDriver; curl for bench/api_list.sh.
  chromium chromium-driver curl
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
