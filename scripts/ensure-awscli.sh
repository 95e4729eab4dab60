#!/usr/bin/env bash
# Make sure the AWS CLI (v1, from PyPI) is in .tools/awscli: the remote-tier audit prints `aws s3 rm`
# fixes, and tests/spark/test_remote_audit_s3.py runs them as printed against moto. A venv of its own
# (awscli pins its own botocore, which the project's boto3/moto pins do not match); no-op when there.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="1.46.3"
dir="$root/.tools/awscli"
python="${PYTHON:-python3.11}"

if [ -x "$dir/bin/aws" ] && [ -f "$dir/.installed-$version" ]; then
    exit 0
fi
echo "ensure-awscli: installing awscli $version in $dir" >&2
rm -rf "$dir"
"$python" -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check "awscli==$version"
touch "$dir/.installed-$version"
