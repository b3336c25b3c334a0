#!/usr/bin/env bash
# The agent's memory budget, checked on the binaries: the agent must not
# need libarchive (about 3 MiB of VmRSS in every agent process,
# docs/figures.md "Memory of the libraries"). daemonlet-image, which does
# all the archive work, links libarchive statically and must need neither
# libarchive13, nor libxml2 and ICU (36 MiB installed, brought by
# libarchive's XAR format), nor libcurl (loaded for a registry pull only):
# the packages' size on a board (docs/dependencies.md). Read from DT_NEEDED
# with readelf, so it works on cross-built binaries too.
set -uo pipefail
agent=${1:?usage: needed_libs.sh DAEMONLET DAEMONLET_IMAGE}
image_tool=${2:?usage: needed_libs.sh DAEMONLET DAEMONLET_IMAGE}
failed=0 passed=0
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
check() {  # check DESCRIPTION COMMAND...
    if "${@:2}"; then passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi
}
agent_needs=$(needed "$agent")
tool_needs=$(needed "$image_tool")
check "readelf reads the agent's DT_NEEDED" test -n "$agent_needs"
for lib in libarchive libxml2 libicu; do
    check "the agent needs no $lib: $(echo "$agent_needs" | grep "$lib" | tr '\n' ' ')" \
        bash -c "! grep -q '^$lib' <<<\"\$0\"" "$agent_needs"
done
# Nor gRPC, protobuf, abseil: the CRI runtime is a module loaded for
# runtime.type cri only (about 8 MiB of VmRSS, platform/cri/cri_runtime.h).
for lib in libgrpc libprotobuf libabsl; do
    check "the agent needs no $lib: $(echo "$agent_needs" | grep "$lib" | tr '\n' ' ')" \
        bash -c "! grep -q '^$lib' <<<\"\$0\"" "$agent_needs"
done
# Nor the TLS libraries: mbed TLS (the API server client, kubeconfig's
# base64), nghttp2 (its HTTP/2), libcurl (probes) and libcrypto are loaded
# when first used (platform/http/mbedtls_api.h, nghttp2_api.h, curl_api.h):
# linked, mbed TLS alone costs an idle agent about 400 KiB of VmRSS.
for lib in libmbedtls libmbedx509 libmbedcrypto libnghttp2 libcurl libcrypto libssl; do
    check "the agent needs no $lib: $(echo "$agent_needs" | grep "$lib" | tr '\n' ' ')" \
        bash -c "! grep -q '^$lib' <<<\"\$0\"" "$agent_needs"
done
check "readelf reads daemonlet-image's DT_NEEDED" test -n "$tool_needs"
for lib in libarchive libxml2 libicu libcurl; do
    check "daemonlet-image needs no $lib: $(echo "$tool_needs" | grep "$lib" | tr '\n' ' ')" \
        bash -c "! grep -q '^$lib' <<<\"\$0\"" "$tool_needs"
done
# libarchive is in it, statically: the archive work is there.
check "daemonlet-image has libarchive linked in (archive_read_new)" \
    bash -c "readelf -sW \"\$0\" | grep -q ' archive_read_new\$'" "$image_tool"
# GnuTLS, loaded with libcurl (through librtmp and LDAP), skips its
# constructor's initialisation for a program that defines this symbol
# (0.75 MiB of a connected agent's VmRSS, platform/http/curl_api.cpp): it
# must be in the agent's dynamic symbol table, where the constructor's
# lookup finds it, not only in its code.
check "the agent exports _gnutls_global_init_skip" \
    bash -c "readelf --dyn-syms -W \"\$0\" | grep -q ' _gnutls_global_init_skip\$'" "$agent"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
