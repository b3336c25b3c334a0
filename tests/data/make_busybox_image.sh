#!/usr/bin/env bash
# Builds a minimal OCI image-layout tarball from Debian's busybox-static:
# one layer (bin/busybox and the symlinks sh, sleep, cat, echo to it) and a
# config whose Cmd is ["sh"]. Only tar, gzip, sha256sum and the shell: the
# image is built where no image tool is installed, byte for byte the same
# for the same busybox (sorted members, numeric owners, fixed times).
#
#   make_busybox_image.sh OUT.tar [NAME]     NAME: docker.io/library/busybox:latest
#
# Environment: BUSYBOX (default /bin/busybox), GOARCH (default from uname -m),
# EXTRA_LAYERS_MIB (e.g. "16 16 16": one more layer per number, each a file
# data/<n>.bin of that many MiB of pseudo-random bytes from AES-CTR over
# zeros: incompressible like real binaries, and the same at every run),
# LAYERS (default 1): that many small layers, each above the first adding
# one file etc/layer<n> (an image of many layers, as overlay's mount
# options limit); extra layers of EXTRA_LAYERS_MIB come above them,
# IMAGE_CMD (the config's Cmd as a JSON array, default ["sh"]: test_cri.sh
# makes its pod sandbox ("pause") image with a long sleep),
# LAYER_TAG (adds etc/daemonlet-layer-tag holding it to the first layer: a
# layer digest no other test's busybox image has, for a test whose checks
# would see another test's overlay of the shared busybox layer),
# IMAGE_USER (the config's User, e.g. "app": test_runc_security.sh's named
# user; with it the first layer holds etc/passwd with root and
# app:1234:1234, and etc/group with app 1234 and extra 2345 listing app).
set -euo pipefail

out=${1:?usage: make_busybox_image.sh OUT.tar [NAME]}
name=${2:-docker.io/library/busybox:latest}
busybox=${BUSYBOX:-/bin/busybox}
[[ -x $busybox ]] || { echo "make_busybox_image: $busybox: not found (apt-get install busybox-static)" >&2; exit 1; }

variant=
case ${GOARCH:-$(uname -m)} in
    x86_64 | amd64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 variant=v8 ;;
    armv7l | arm) arch=arm variant=v7 ;;
    armv6l) arch=arm variant=v6 ;;
    *) echo "make_busybox_image: unknown architecture ${GOARCH:-$(uname -m)}" >&2; exit 1 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs/bin" "$work/layout/blobs/sha256"
cp "$busybox" "$work/rootfs/bin/busybox"
chmod 0755 "$work/rootfs/bin/busybox"
for applet in sh sleep cat echo; do
    ln -s busybox "$work/rootfs/bin/$applet"
done
members=(bin)
if [[ -n ${LAYER_TAG:-} ]]; then
    mkdir -p "$work/rootfs/etc"
    echo "$LAYER_TAG" >"$work/rootfs/etc/daemonlet-layer-tag"
    members+=(etc)
fi
if [[ -n ${IMAGE_USER:-} ]]; then
    mkdir -p "$work/rootfs/etc"
    printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1234:1234:app:/:/bin/sh\n' >"$work/rootfs/etc/passwd"
    printf 'root:x:0:\napp:x:1234:\nextra:x:2345:app\n' >"$work/rootfs/etc/group"
    [[ -z ${LAYER_TAG:-} ]] && members+=(etc)
fi

reproducible=(--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime)
tar "${reproducible[@]}" -C "$work/rootfs" -cf "$work/layer.tar" "${members[@]}"
diff_ids="\"sha256:$(sha256sum "$work/layer.tar" | cut -d' ' -f1)\""
gzip -n -9 "$work/layer.tar"

# Moves FILE into blobs/sha256 and prints its "digest size".
add_blob() {
    local hex size
    hex=$(sha256sum "$1" | cut -d' ' -f1)
    size=$(stat -c %s "$1")
    mv "$1" "$work/layout/blobs/sha256/$hex"
    echo "sha256:$hex $size"
}

read -r layer_digest layer_size < <(add_blob "$work/layer.tar.gz")
layers="{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"$layer_digest\",\"size\":$layer_size}"
for ((n = 2; n <= ${LAYERS:-1}; n++)); do
    mkdir -p "$work/extra$n/etc"
    echo "$n" >"$work/extra$n/etc/layer$n"
    tar "${reproducible[@]}" -C "$work/extra$n" -cf "$work/extra$n.tar" etc
    diff_ids+=",\"sha256:$(sha256sum "$work/extra$n.tar" | cut -d' ' -f1)\""
    read -r extra_digest extra_size < <(add_blob "$work/extra$n.tar")
    layers+=",{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"$extra_digest\",\"size\":$extra_size}"
done
n=0
for mib in ${EXTRA_LAYERS_MIB:-}; do
    n=$((n + 1))
    rm -rf "$work/extra" && mkdir -p "$work/extra/data"
    # (Not a pipe: openssl's SIGPIPE when head has enough would fail it.)
    head -c $((mib * 1024 * 1024)) \
        < <(openssl enc -aes-128-ctr -nosalt -K "$(printf '%032x' "$n")" -iv 0 </dev/zero 2>/dev/null) \
        >"$work/extra/data/$n.bin"
    tar "${reproducible[@]}" -C "$work/extra" -cf "$work/extra.tar" data
    extra_diff=$(sha256sum "$work/extra.tar" | cut -d' ' -f1)
    gzip -n -1 "$work/extra.tar"
    read -r extra_digest extra_size < <(add_blob "$work/extra.tar.gz")
    diff_ids+=",\"sha256:$extra_diff\""
    layers+=",{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"$extra_digest\",\"size\":$extra_size}"
done

platform="\"architecture\":\"$arch\",\"os\":\"linux\""
[[ -n $variant ]] && platform+=",\"variant\":\"$variant\""
printf '%s' "{$platform,\"config\":{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"],\"Cmd\":${IMAGE_CMD:-[\"sh\"]}${IMAGE_USER:+,\"User\":\"$IMAGE_USER\"}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[$diff_ids]}}" >"$work/config.json"
read -r config_digest config_size < <(add_blob "$work/config.json")

printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"$config_digest\",\"size\":$config_size},\"layers\":[$layers]}" >"$work/manifest.json"
read -r manifest_digest manifest_size < <(add_blob "$work/manifest.json")

# containerd's convention: the full name, and the tag as ref.name.
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"$manifest_digest\",\"size\":$manifest_size,\"platform\":{$platform},\"annotations\":{\"io.containerd.image.name\":\"$name\",\"org.opencontainers.image.ref.name\":\"${name##*:}\"}}]}" >"$work/layout/index.json"
printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$work/layout/oci-layout"

tar "${reproducible[@]}" -C "$work/layout" -cf "$out" oci-layout index.json blobs
echo "make_busybox_image: $out: $name, manifest $manifest_digest"
