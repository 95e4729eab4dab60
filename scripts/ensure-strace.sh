#!/usr/bin/env bash
# Make sure strace is installed (the read-only proof of tests/checks/test_live_broker.py traces the
# read-only commands on a live log dir). No-op when it is on PATH; installs Debian's strace package with
# apt-get when we are root; else says what to do.
set -euo pipefail

if command -v strace >/dev/null 2>&1; then
    echo "ensure-strace: $(command -v strace) present ($(strace -V 2>/dev/null | head -1)); nothing to do"
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "ensure-strace: strace missing and not root; run as root: apt-get update && apt-get install -y strace" >&2
    exit 1
fi
echo "ensure-strace: strace missing; installing Debian's strace package"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq strace >/dev/null
echo "ensure-strace: installed $(strace -V 2>/dev/null | head -1)"
