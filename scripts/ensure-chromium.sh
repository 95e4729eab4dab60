#!/usr/bin/env bash
# Make sure Debian's chromium is installed (for the HTML report's browser test and screenshot).
# No-op when /usr/bin/chromium exists; installs it with apt-get when we are root; else says what to do.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "ensure-chromium: /usr/bin/chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown')); nothing to do"
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "ensure-chromium: /usr/bin/chromium missing and not root; run as root: apt-get update && apt-get install -y chromium" >&2
    exit 1
fi
echo "ensure-chromium: /usr/bin/chromium missing; installing Debian's chromium package"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
echo "ensure-chromium: installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
