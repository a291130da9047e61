#!/usr/bin/env bash
# Installs everything npusim needs to build and test, from Debian packages only. Idempotent: when
# every package is already installed it does nothing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache git clang-format
  libsystemc-dev libboost-program-options-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev
  clang-14 libfuzzer-14-dev
  libonnx-dev libprotobuf-dev protobuf-compiler python3-onnx python3-numpy libonnx-testdata
  python3-torch python3-torchvision python3-sklearn python3-scipy
  libdnnl-dev
  python3-pytest python3-tqdm python3-distributed python3-matplotlib
  pybind11-dev python3-pybind11 jupyter-nbconvert python3-ipykernel
  python3
  chromium chromium-driver python3-selenium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages are installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
