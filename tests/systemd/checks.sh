# shellcheck shell=bash
# The checks of the boot tests (sourced by nspawn_boot.sh on the host and by
# vm_cgroup2_check.sh inside the VM): one line per check, counted in passed
# and failed. A caller may set check_ok and check_fail, the lines' prefixes
# (default "ok:" and "FAIL:").
passed=0 failed=0
ok() {
    echo "${check_ok:-ok:} $*"
    passed=$((passed + 1))
}
fail() {
    echo "${check_fail:-FAIL:} $*"
    failed=$((failed + 1))
}
check() { # check DESCRIPTION COMMAND...: one immediate check
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then ok "$what"; else fail "$what"; fi
}
# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND until it succeeds,
# at most SECONDS; the poll's pause is no synchronisation, the deadline is.
wait_for() {
    local what=$1 secs=$2
    shift 2
    local deadline=$((SECONDS + secs))
    while ((SECONDS < deadline)); do
        if "$@" >/dev/null 2>&1; then
            ok "$what"
            return 0
        fi
        sleep 0.2
    done
    fail "$what (not within ${secs}s)"
    return 1
}
