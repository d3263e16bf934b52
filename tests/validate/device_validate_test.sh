#!/usr/bin/env bash
# scripts/device-validate end to end on the host backend: a bundle laid out as
# scripts/device-bundle lays it out (bin/, lib/, the script), the four checks run, and each
# ends with the exit status it expects (a, b, c fit; d, a's plan held to 24 GiB, does not).
# Usage: device_validate_test.sh SHARDPLAN WORKER SCRIPT
set -euo pipefail
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bundle/bin" "$tmp/bundle/lib"
ln -s "$1" "$tmp/bundle/bin/shardplan"
ln -s "$2" "$tmp/bundle/bin/shardplan-validate-worker"
cp "$3" "$tmp/bundle/device-validate"
"$tmp/bundle/device-validate" "$tmp/out" --backend host
status=0
for want in "a: exit 0 (expected 0)" "b: exit 0 (expected 0)" "c: exit 0 (expected 0)" "d: exit 1 (expected 1)"; do
  grep -qF "$want" "$tmp/out/summary.txt" || { echo "missing: $want" >&2; status=1; }
done
grep -q "does not fit in the capacity" "$tmp/out/d.log" || { echo "d.log names no failed allocation" >&2; status=1; }
grep -q '"fits": true' "$tmp/out/c.json" || { echo "c.json: the int4 serving plan did not fit" >&2; status=1; }
exit $status
