# free_port: a loopback TCP port nobody listens on (ss lists the listeners),
# below the kernel's ephemeral range (32768 and up), where the test servers
# that bind port 0 and every outgoing connection take theirs. Sourced by
# tests/agent/lib.sh and bench/bench_metrics.sh.
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 12000))
        ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
    done
}
