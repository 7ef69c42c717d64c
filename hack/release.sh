#!/usr/bin/env bash
# Makes a release from a tag: static binaries for every platform, the Claude Desktop bundle
# (.mcpb), the MCP registry's server.json, the server image and the Helm chart package, and
# SHA256SUMS over all of it, into OUT (default dist/, which git ignores).
#
# Usage: hack/release.sh TAG [OUT]        TAG is vMAJOR.MINOR.PATCH[-PRERELEASE]
#
# The tag is the one owner of the version: the binaries carry it (-X main.buildVersion, what
# --version and the MCP serverInfo say), and the bundle's manifest.json and server.json are
# deploy/release/'s templates with their placeholder version 0.0.0-dev replaced by TAG without
# its v (internal/release's test checks that the three agree).
#
# Knobs (environment):
#   RELEASE_PLATFORMS  space-separated GOOS/GOARCH list, or "host" for this machine's alone
#                      (default: every platform the bundle carries, below). The tests use "host":
#                      cross-compiling five platforms takes minutes of CPU.
#   RELEASE_SKIP       comma list of parts to leave out: image, chart.
# Needs Go, and @anthropic-ai/mcpb from npm (hack/deps.sh installs it under the cache).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/hack/localstack/versions.sh"

die() { echo "release: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: hack/release.sh TAG [OUT]"
tag=$1
out=${2:-$root/dist}
# Semantic versioning with a v, as Go modules and the registry want it (no ranges, no "latest").
[[ $tag =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  die "TAG must look like v1.2.3 or v1.2.3-rc.1, got \"$tag\""
version=${tag#v}
# What the bundle carries: most Claude Desktop users are on macOS (Apple silicon and Intel).
all_platforms="darwin/arm64 darwin/amd64 windows/amd64 linux/amd64 linux/arm64"
platforms=${RELEASE_PLATFORMS:-$all_platforms}
[ "$platforms" = host ] && platforms="$(go env GOOS)/$(go env GOARCH)"
skip=",${RELEASE_SKIP:-},"
# A release is built from the tagged commit, clean; the tests build test tags from any tree.
if [ "$(git -C "$root" rev-parse -q --verify "refs/tags/$tag^{commit}" 2>/dev/null)" != "$(git -C "$root" rev-parse HEAD)" ] ||
  [ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]; then
  echo "release: warning: the tree is not a clean checkout of $tag: fine for a test, not for a release" >&2
fi
[ -x "$MCPB_BIN/mcpb" ] || die "@anthropic-ai/mcpb $MCPB_VERSION is not installed: run hack/deps.sh"

# OUT is emptied first: refuse anything but dist/ or a missing or empty directory.
if [ "$out" != "$root/dist" ] && [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
  die "OUT $out is not empty"
fi
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/k8s-sandbox-mcp-release.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# build_binaries: one static binary per platform (as install.sh builds, plus the version), into
# OUT under its release name and into the bundle's server/<os>-<arch>/.
build_binaries() {
  local p os arch exe dir
  for p in $platforms; do
    os=${p%/*} arch=${p#*/} exe=""
    [ "$os" = windows ] && exe=.exe
    dir=$stage/server/$os-$arch
    mkdir -p "$dir"
    echo "release: building $os/$arch" >&2
    (cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
      -ldflags "-s -w -X main.buildVersion=$tag" -o "$dir/k8s-sandbox-mcp$exe" .)
    cp "$dir/k8s-sandbox-mcp$exe" "$out/k8s-sandbox-mcp-$version-$os-$arch$exe"
  done
}

# stamp <template>: the template with its placeholder version replaced by the tag's, on stdout.
stamp() {
  grep -q '0\.0\.0-dev' "$1" || die "$1 has no placeholder version 0.0.0-dev"
  sed "s/0\.0\.0-dev/$version/g" "$1"
}

# build_bundle: the .mcpb (a zip with manifest.json at its root), validated and packed by the
# reference tool. On macOS and Linux the manifest's command is a launcher that picks the binary
# for the CPU (the manifest can only tell platforms apart); Windows runs its .exe.
build_bundle() {
  cp "$root/deploy/release/launcher.sh" "$stage/server/k8s-sandbox-mcp"
  chmod 755 "$stage/server/k8s-sandbox-mcp"
  stamp "$root/deploy/release/manifest.json" >"$stage/manifest.json"
  # The bundle's Node 22 is first on PATH: the machine's Node may be older.
  PATH=$MCPB_BIN:$PATH mcpb validate "$stage/manifest.json" >&2
  PATH=$MCPB_BIN:$PATH mcpb pack "$stage" "$out/k8s-sandbox-mcp-$version.mcpb" >&2
}

# build_server_json: the registry entry, naming the bundle's release URL and its sha256.
build_server_json() {
  local sum
  sum=$(sha256sum "$out/k8s-sandbox-mcp-$version.mcpb" | cut -d' ' -f1)
  stamp "$root/deploy/release/server.json" | sed "s/\"fileSha256\": \"0\{64\}\"/\"fileSha256\": \"$sum\"/" >"$out/server.json"
  grep -q "\"fileSha256\": \"$sum\"" "$out/server.json" || die "server.json: the bundle's sha256 was not stamped"
}

# --- The server image: hack/image.sh is its one recipe. It writes OUT/image/layout (an OCI
# layout of one index, linux/amd64 and arm64) and OUT/image/sbom, named as deploy/deployment.yaml
# names the image, tagged with the release's tag (the chart below names it so).
build_image() {
  if [[ $skip == *,image,* ]]; then echo "release: image skipped (RELEASE_SKIP)" >&2; return; fi
  "$root/hack/image.sh" "$out/image" "$tag" >&2
}

# --- The Helm chart package: charts/k8s-sandbox-mcp at the tag's version, with the helm
# hack/helm.sh installs (it builds it from the module proxy when missing).
build_chart() {
  if [[ $skip == *,chart,* ]]; then echo "release: chart skipped (RELEASE_SKIP)" >&2; return; fi
  local helm
  helm=$("$root/hack/helm.sh" --path)
  "$helm" package "$root/charts/k8s-sandbox-mcp" --version "$version" --app-version "$tag" --destination "$out" >&2
}

build_binaries
if [ "$platforms" != "$all_platforms" ]; then
  echo "release: this bundle carries $platforms only: a test build, not a release" >&2
fi
build_bundle
build_server_json
build_image
build_chart
# Checksums of every file made, in sha256sum's format (sha256sum -c SHA256SUMS checks them).
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -r sha256sum >SHA256SUMS)
echo "release: $tag in $out" >&2
