#!/usr/bin/env bash
# Builds the server's container image with ko (github.com/google/ko, from the Go module proxy):
# no docker engine, no registry. The one recipe for the image: the local stack's server pod
# runs what it makes (hack/localstack/images.sh server), and a release publishes it.
#
#   hack/image.sh OUT [TAG]
#
# Writes OUT/layout, an OCI image layout holding one image index (linux/amd64 and linux/arm64,
# .ko.yaml), and OUT/sbom, ko's SPDX SBOM of each image; prints "<name> <index digest>", the
# name being deploy/deployment.yaml's, with TAG for its tag when given (a release's: the chart
# it packages names the image by that tag). Push it with e.g. `crane push OUT/layout NAME`.
#
# What makes it reproducible (the same commit gives the same digest; internal/e2e
# TestServerImageIsReproducible builds it twice): the base is made from nothing by code
# (hack/localstack/build/images/internal/kobase) and pinned by digest in .ko.yaml, and ko finds
# it in a layout of its cache (KOCACHE) instead of a registry; ko builds with -trimpath and the
# module's pinned dependencies; every time in the image is the commit's (SOURCE_DATE_EPOCH).
# Static (CGO_ENABLED=0) and nonroot (the base's user 65532).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=localstack/versions.sh
. "$here/localstack/versions.sh"

log() { echo "image: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: hack/image.sh OUT [TAG]"
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
name=$(server_image "$repo")
[ -n "$name" ] || die "no image: line in deploy/deployment.yaml"
if [ $# -eq 2 ]; then name=${name%:*}:$2; fi

if [ ! -x "$KO" ]; then
  log "installing ko $KO_VERSION"
  GOBIN=$(dirname "$KO") CGO_ENABLED=0 go install -trimpath "github.com/google/ko@$KO_VERSION" ||
    die "go install github.com/google/ko@$KO_VERSION failed"
fi

# ko names what it writes into a layout by the layout's path, which must then be a valid
# repository name (lowercase): mktemp's random letters are not, so the work directory is named
# here.
n=0
while ! mkdir -m 700 "/tmp/k8s-sandbox-mcp-image.$$.$n" 2>/dev/null; do n=$((n + 1)); done
work=/tmp/k8s-sandbox-mcp-image.$$.$n
trap 'rm -rf "$work"' EXIT
# The base, where ko looks a digest up before asking a registry.
base=$(cd "$here/localstack/build/images" && CGO_ENABLED=0 go run -trimpath ./cmd/mkimage base -layout "$work/kocache/img") ||
  die "making the base image failed"
pinned=$(sed -n 's/^defaultBaseImage: .*@\(sha256:[0-9a-f]*\)$/\1/p' "$repo/.ko.yaml")
[ "$base" = "$pinned" ] || die "the base's digest is $base, .ko.yaml pins $pinned: the base changed; pin its new digest in .ko.yaml"

# The commit's time, or 0 outside a git checkout: the image's and its files' times.
epoch=$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)
rm -rf "$out/layout" "$out/sbom"
(cd "$repo" && KOCACHE=$work/kocache KO_CONFIG_PATH=$repo/.ko.yaml KO_DOCKER_REPO=${name%:*} \
  SOURCE_DATE_EPOCH=$epoch GOFLAGS=-trimpath \
  "$KO" build --bare --push=false --oci-layout-path "$work/layout" --sbom spdx --sbom-dir "$out/sbom" \
  --tags "${name##*:}" --image-refs "$work/refs" .) >&2 || die "ko build failed"
mv "$work/layout" "$out/layout"
# The refs: the index first, then each platform's image.
digest=$(sed -n '1s/.*@\(sha256:[0-9a-f]*\)$/\1/p' "$work/refs")
[ -n "$digest" ] && grep -q "\"$digest\"" "$out/layout/index.json" ||
  die "ko's first ref is not the layout's index: $(cat "$work/refs")"
ls "$out/sbom"/*.json >/dev/null 2>&1 || die "ko wrote no SBOM in $out/sbom"
echo "$name $digest"
