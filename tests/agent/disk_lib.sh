# shellcheck shell=bash
# A stateDir that can fill up (sourced after lib.sh): a small ext4 file
# system on a loop device, mounted errors=remount-ro as a board's flash is.
# disk_mount exits (SKIPPED) where that cannot be done; disk_fill fills it
# until a small fsync'd write fails; disk_free gives the space back.
disk_mount() {
    [[ $(id -u) -eq 0 ]] || { echo "SKIPPED: mounting a file system needs root"; exit 0; }
    [[ -z ${EMULATOR:-} ]] || { echo "SKIPPED: not under an emulator"; exit 0; }
    for tool in mkfs.ext4 e2fsck sqlite3 jq; do
        command -v $tool >/dev/null || { echo "FAIL: $tool is missing (scripts/setup.sh installs it)"; exit 1; }
    done
    trap disk_cleanup EXIT
    img=$work/state.img
    mkdir -p "$state"
    truncate -s 16M "$img"
    mkfs.ext4 -q -F -m 0 "$img" || { echo "FAIL: mkfs.ext4"; exit 1; }
    mount -o loop,errors=remount-ro "$img" "$state" || { echo "SKIPPED: cannot mount a loop device here"; exit 0; }
    loopdev=$(findmnt -no SOURCE "$state")
}
disk_fill() {
    # ext4 keeps some blocks back for its delayed allocation and frees more
    # as its journal commits: small writes are made until they fail too.
    dd if=/dev/zero of="$state/fill" bs=64k 2>/dev/null
    for ((i = 0; i < 64; i++)); do dd if=/dev/zero of="$state/fill.$i" bs=4k count=1 conv=fsync 2>/dev/null || break; done
    dd if=/dev/zero of="$state/probe" bs=4k count=1 conv=fsync 2>/dev/null && fail "the disk is not full: $(df "$state")" || ok
}
disk_free() { rm -f "$state"/fill* "$state/probe"; }
disk_cleanup() {
    [[ -n ${DISK_TEST_KEEP_LOGS:-} ]] && mkdir -p "$DISK_TEST_KEEP_LOGS" && cp "$work"/*.log "$DISK_TEST_KEEP_LOGS"/ 2>/dev/null &&
        cp "$state"/runtime/containers/*/shim.log "$DISK_TEST_KEEP_LOGS"/ 2>/dev/null
    [[ -n $agent ]] && kill -9 "$agent" 2>/dev/null
    pkill -KILL -f "daemonlet-shim.*$work" 2>/dev/null
    pkill -KILL -f "it-marker-$$-" 2>/dev/null
    mountpoint -q "$state" && umount -l "$state"
    if declare -F cleanup_cluster >/dev/null; then cleanup_cluster; else cleanup; fi
}
