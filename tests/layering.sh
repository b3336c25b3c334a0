#!/usr/bin/env bash
# The layering rule, checked on the sources (every folder at any depth):
# core/ includes no libuv, SQLite or systemd headers; store/ and platform/
# never include each other; nothing includes agent/ but agent/ (and the
# tests of its components); nothing outside agent/cli/ includes the verbs;
# the shim and the CRI module include no other platform folder; the agent
# uses no iostreams; mbed TLS stays behind the API client's connection.
# (CMake's PRIVATE links stop the linking; this stops a header-only include
# from slipping through.)
set -uo pipefail
root=${1:?usage: layering.sh REPO_ROOT}
cd "$root"
failed=0 passed=0
rule() {  # rule NAME "DIR..." PATTERN ["FILE..." allowed to match]
    local hits dirs allowed
    read -ra dirs <<<"$2"
    hits=$(grep -rnE --include='*.h' --include='*.cpp' "$3" "${dirs[@]}" || true)
    for allowed in ${4:-}; do
        hits=$(grep -v "^$allowed:" <<<"$hits" || true)
    done
    if [[ -n $hits ]]; then
        echo "FAIL: $1"
        echo "$hits" | sed 's/^/  /'
        failed=$((failed + 1))
    else
        passed=$((passed + 1))
    fi
}
rule "core includes no I/O library headers" core '#include\s*[<"](uv\.h|sqlite3\.h|systemd/)'
rule "core includes no other layer" core '#include\s*"(store|platform|agent)/'
rule "store does not include platform or agent" store '#include\s*"(platform|agent)/'
rule "platform does not include store or agent" platform '#include\s*"(store|agent)/'
rule "bench and fuzz do not include agent" "bench fuzz" '#include\s*"agent/'
rule "nothing outside agent/cli includes agent/cli" "core store platform agent/daemon tests bench fuzz" \
    '#include\s*"agent/cli/'
rule "the shim includes no other platform folder" platform/shim \
    '#include\s*"(store|agent|platform/(exec|runc|cri|image|probe|http)/)'
rule "the CRI module includes no other platform folder" platform/cri \
    '#include\s*"(store|agent|platform/(shim|exec|runc|image|probe|http)/)'
# The agent links libstdc++ statically in lean builds (CMakeLists.txt):
# iostreams would bring their locale facets, to_chars for double its
# tables, about 0.5 MiB of the board's package. (daemonlet-image and the
# CRI module, platform/image and platform/cri, are programs of their own.)
rule "the agent's code uses no iostreams and no std::to_chars" \
    "core store agent platform/exec platform/runc platform/probe platform/http platform/shim $(echo platform/*.h platform/*.cpp)" \
    '#include\s*<(sstream|fstream|iostream|istream|ostream)>|std::to_chars'
# mbed TLS stays behind the API client's connection (api_connection.h):
# its types and codes reach neither the protocols nor the pool. Its loader
# and kubeconfig's base64 (credentials.cpp) use it too; tests may.
rule "only api_connection.cpp, the loader and credentials.cpp include mbed TLS" \
    "core store platform agent bench fuzz" '#include\s*[<"](mbedtls/|platform/http/mbedtls_api\.h)' \
    "platform/http/api_connection.cpp platform/http/mbedtls_api.h platform/http/mbedtls_api.cpp platform/http/credentials.cpp"
rule "core reads no clock" core '(std::chrono::(system|steady)_clock|[^_]time\(|gettimeofday|clock_gettime)'
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
