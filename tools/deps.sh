#!/usr/bin/env bash
# Installs the Debian packages meshtune builds and runs with, when missing.
# Idempotent and quiet when everything is present. Needs root (or sudo) to install.
set -euo pipefail

packages=(
  bazel-bootstrap g++ libisl-dev libabsl-dev libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc libspdlog-dev libsqlite3-dev
  libopenmpi-dev openmpi-bin libopenblas-dev libscalapack-openmpi-dev libgtest-dev libbenchmark-dev
  libcli11-dev clang-format cmake libcpp-httplib-dev
  slurmctld slurmd slurm-client munge
  chromium chromium-driver python3-selenium
  python3-dev pybind11-dev python3-mpi4py python3-numpy python3-grpcio python3-protobuf
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "meshtune: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
