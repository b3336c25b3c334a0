#!/usr/bin/env bash
# `cmake --install --prefix P` installs a unit whose ExecStart= is P's
# binary (issue 16: the unit kept the configure-time prefix, and a service
# installed under another prefix failed with 203/EXEC). Installs the agent
# component into a DESTDIR under two prefixes, neither the configured one.
set -uo pipefail
build=${1:?usage: install_prefix.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() {
    if "${@:2}"; then passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi
}
for prefix in /opt/daemonlet /usr; do
    dest="$tmp${prefix//\//_}"
    if ! DESTDIR="$dest" cmake --install "$build" --prefix "$prefix" --component agent >"$tmp/log" 2>&1; then
        cat "$tmp/log"
        echo "FAIL: cmake --install --prefix $prefix"
        exit 1
    fi
    unit="$dest$prefix/lib/systemd/system/daemonlet.service"
    check "the unit is installed under $prefix" test -f "$unit"
    exec_start="$(sed -n -E 's/^ExecStart=([^ ]+).*/\1/p' "$unit" 2>/dev/null)"
    check "ExecStart= ($exec_start) is $prefix/bin/daemonlet" test "$exec_start" = "$prefix/bin/daemonlet"
    check "...which the install put there" test -x "$dest$exec_start"
    doc="$(sed -n -E 's|^Documentation=file:(.*)|\1|p' "$unit" 2>/dev/null)"
    check "Documentation= ($doc) is under $prefix and installed" test -f "$dest$doc" -a "${doc#"$prefix"/}" != "$doc"
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
