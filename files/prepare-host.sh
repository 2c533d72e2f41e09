#!/bin/sh
# What `make demo` and `make test` need on a fresh Debian or Ubuntu machine, installed and started: the Docker engine
# (docker.io), debootstrap (builds the simulated host's image), make, python3-venv, nftables (the cluster stage's
# firewall of Ray's ports; on real hosts too). Run as root:
#   sudo sh files/prepare-host.sh
# Safe to run again: it installs only what is missing and starts the engine only when it does not answer.
# .ci/run calls it, so the README's commands and CI set up the same machine.
set -eu

if [ "$(id -u)" != 0 ]; then
  echo "prepare-host: run as root (sudo sh $0): it installs packages and starts dockerd" >&2
  exit 1
fi

need=""
command -v dockerd >/dev/null 2>&1 || need="$need docker.io"
command -v debootstrap >/dev/null 2>&1 || need="$need debootstrap"
command -v make >/dev/null 2>&1 || need="$need make"
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need="$need python3-venv"
command -v nft >/dev/null 2>&1 || need="$need nftables"
if [ -n "$need" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "prepare-host: not a Debian or Ubuntu machine; install these yourself:$need" >&2
    exit 1
  fi
  echo "prepare-host: installing$need (apt-get)"
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
else
  echo "prepare-host: docker.io, debootstrap, make, python3-venv and nftables are there"
fi

if docker info >/dev/null 2>&1; then
  echo "prepare-host: the Docker engine answers"
  exit 0
fi
log=/var/log/dockerd-grpo.log
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  echo "prepare-host: starting the Docker engine (systemctl start docker)"
  systemctl start docker
else
  # no systemd (a container, a minimal VM): dockerd in the background, its log in $log
  echo "prepare-host: starting dockerd in the background (log: $log)"
  nohup dockerd >"$log" 2>&1 &
fi
i=0
while [ $i -lt 60 ]; do
  docker info >/dev/null 2>&1 && { echo "prepare-host: the Docker engine answers"; exit 0; }
  i=$((i + 1))
  sleep 1
done
echo "prepare-host: the Docker engine did not answer within 60 s; its log:" >&2
tail -20 "$log" 2>/dev/null >&2 || journalctl -u docker --no-pager -n 20 >&2 || true
exit 1
