#!/usr/bin/env bash
# The unit CMake generates from dist/daemonlet.service.in, checked by
# systemd-analyze verify, with ExecStart pointing at the built binary rather
# than the install path (verify insists the command exists).
set -uo pipefail
unit=${1:?usage: systemd_verify.sh UNIT DAEMONLET_BINARY}
bin=${2:?}
if ! command -v systemd-analyze >/dev/null; then
    echo "systemd-analyze not installed"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -E "s|^ExecStart=[^ ]+|ExecStart=$bin|" "$unit" >"$tmp/daemonlet.service"
# Any of these gives the agent its own mount namespace, where the runc
# runtime's rootfs overlay mounts would be hidden from the host and lost on
# an agent restart.
if grep -Eq '^(PrivateMounts|MountFlags|ProtectSystem|ProtectHome|PrivateTmp|PrivateDevices|ReadOnlyPaths|ReadWritePaths|InaccessiblePaths|TemporaryFileSystem|BindPaths)=' "$unit"; then
    echo "FAIL: $unit sets a mount namespace option:"
    grep -E '^(PrivateMounts|MountFlags|Protect|Private|ReadOnly|ReadWrite|Inaccessible|Temporary|Bind)' "$unit"
    echo "0 passed, 1 failed"
    exit 1
fi
out=$(systemd-analyze verify "$tmp/daemonlet.service" 2>&1)
status=$?
# Lines about other units on the host are not ours.
ours=$(grep -F 'daemonlet.service' <<<"$out" || true)
if [[ $status -ne 0 || -n $ours ]]; then
    echo "FAIL: systemd-analyze verify:"
    echo "$out"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "1 passed, 0 failed"
