// Container image references, parsed and normalised as the Docker and
// Kubernetes tools do: distribution/reference's grammar (regexp.go),
// ParseNormalizedNamed and ParseDockerRef (normalize.go), and go-digest's
// digest validation. "busybox" is docker.io/library/busybox:latest.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace daemonlet {

struct ImageReference {
    std::string domain;  // "docker.io", "host:5000", "[::1]:5000"
    std::string path;    // "library/busybox", "x/y"
    std::string tag;     // "latest"; empty when the reference is by digest
    std::string digest;  // "sha256:<64 hex>"; empty when by tag

    std::string name() const { return domain + "/" + path; }
    // The canonical text: name:tag or name@digest.
    std::string str() const;
};

// ParseDockerRef (normalize.go): ParseNormalizedNamed (a familiar name gets
// docker.io and library/, index.docker.io is docker.io, a repository name
// must be lowercase, 64 hex alone is refused), then a reference with both a
// tag and a digest keeps only the digest, and a bare name gets the tag
// "latest" (TagNameOnly). Errors say what upstream says and quote the input.
Result<ImageReference> normalize_image_reference(std::string_view text);

// go-digest's Parse for the algorithms go-digest registers with a hash
// linked (sha256: 64, sha384: 96, sha512: 128 lowercase hex). Empty when
// valid, otherwise the reason ("invalid digest format", "unsupported digest
// algorithm").
std::string digest_error(std::string_view digest);

// A digest this project can verify: "sha256:" followed by 64 lowercase hex
// digits (image-spec descriptor.md: sha256 is the one algorithm every
// implementation must support).
bool is_sha256_digest(std::string_view digest);

}  // namespace daemonlet
