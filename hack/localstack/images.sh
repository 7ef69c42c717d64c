#!/usr/bin/env bash
# Builds the local stack's container images as OCI image tarballs for `ctr -n k8s.io images
# import`: no registry is reachable and no docker engine is needed. Debian images are made from
# Debian packages (apt-get download + dpkg-deb, no maintainer scripts), the rest from static Go
# binaries (hack/localstack/build/images) and the pinned binaries build.sh and build-node.sh
# make (CoreDNS and metrics-server from $STACK_BIN); the server's by hack/image.sh (ko).
#
#   images.sh [IMAGE...]   IMAGE: pause forward sandboxd python-runtime server coredns
#                          metrics-server (default: all), or sandbox: the images of
#                          $AGENT_SANDBOX_VERSION (SANDBOX_IMAGES)
#
# Prints "<image name> <tarball>" per image on stdout. Tarballs are cached in $IMAGES_DIR,
# keyed by the pinned versions and a hash of every input (this script, the Go module, the Go
# toolchain, the package lists, the binaries put in, and for the server the clone's sources):
# an existing tarball is reused, so a warm run only hashes. Debian packages are cached in
# $IMAGES_DIR/debs. Needs root: the python runtime's bytecode is compiled inside its image
# with chroot, as Debian's own postinst would.
set -euo pipefail
umask 022
export LC_ALL=C # glob and sort order are part of what the images hold
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
mod=$here/build/images

FORWARD_IMAGE=localhost/k8s-sandbox-mcp/forward:dev
# The sandbox images under the names deploy/examples gives them, as a kind user side-loads
# them (the templates' imagePullPolicy is IfNotPresent: the kubelet finds them and pulls
# nothing). The python runtime is the one upstream publishes for each release
# (registry.k8s.io/agent-sandbox/python-runtime-sandbox); sandboxd has no published release
# image, and kind.local/ is the prefix upstream's own tooling (dev/tools/push-images,
# `make deploy-kind`) gives the images it builds and loads into kind.
SANDBOXD_IMAGE=kind.local/sandboxd:$AGENT_SANDBOX_VERSION
PYTHON_IMAGE=registry.k8s.io/agent-sandbox/python-runtime-sandbox:$AGENT_SANDBOX_VERSION
# The server's image: deploy/deployment.yaml's name, hack/image.sh's build (ko).
SERVER_IMAGE=$(server_image "$repo")
COREDNS_IMAGE=localhost/k8s-sandbox-mcp/coredns:$COREDNS_VERSION
METRICS_SERVER_IMAGE=localhost/k8s-sandbox-mcp/metrics-server:$METRICS_SERVER_VERSION
ALL_IMAGES="pause forward sandboxd python-runtime server coredns metrics-server"
SANDBOX_IMAGES="sandboxd python-runtime" # the images built from agent-sandbox's version

# The Debian base of the sandboxd and python-runtime images (one shared layer): what
# upstream's images give a command to run (debian:bookworm-slim's shell and tools, plus
# ca-certificates and procps), without apt, dpkg or perl.
BASE_PKGS="base-files bash dash coreutils util-linux grep sed findutils diffutils tar gzip mawk hostname procps ca-certificates debianutils"
# The python runtime's layer: Debian's python3 and the server upstream's runtime needs. Its
# requirements.txt also installs pandas, scikit-learn and lightgbm for the model's own use:
# left out here (they would be most of the image).
PYTHON_PKGS="python3 python3-fastapi python3-uvicorn python3-multipart"
# What gcr.io/distroless/static (the base of the CoreDNS and metrics-server images)
# is made of.
STATIC_PKGS="base-files netbase tzdata media-types"
# Packages only maintainer scripts use: never run here, so they are deemed installed rather
# than pulled in with all they depend on (debconf alone brings perl). usr-is-merged stands
# for the merged /usr this script lays out itself.
SCRIPT_ONLY_PKGS="debconf init-system-helpers dpkg perl-base usr-is-merged"
# The alternatives the skipped maintainer scripts would have set: link -> target (same dir).
ALTERNATIVES="/usr/bin/awk=mawk /usr/bin/nawk=mawk /usr/bin/which=which.debianutils /usr/bin/w=w.procps"
PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { echo "images: $*" >&2; }
die() { log "error: $*"; exit 1; }

# hash prints a short hash of its stdin.
hash() { sha256sum | cut -c1-16; }

# tree_hash <dir> <find args...>: hash of the relative paths and contents of matching files.
tree_hash() {
  local dir=$1; shift
  (cd "$dir" && find . "$@" -type f -print0 | sort -z | xargs -0 -r sha256sum) | hash
}

# server_src_hash: what hack/image.sh's build reads from the clone: the root module's Go
# sources (nested modules and tests excluded), go.mod, go.sum, .ko.yaml and the script itself.
server_src_hash() {
  local nested
  nested=$(cd "$repo" && find . -mindepth 2 -name go.mod -not -path './.git/*' -printf '%h\n' | sort)
  (cd "$repo" && find . \( -name .git -o -name .tools -o -name bin \) -prune -o -type f \
    \( -name '*.go' ! -name '*_test.go' -o -path ./go.mod -o -path ./go.sum -o -path ./.ko.yaml -o -path ./hack/image.sh \) -print0 |
    sort -z | while IFS= read -r -d '' f; do
      for n in $nested; do [[ $f == "$n"/* ]] && continue 2; done
      printf '%s\0' "$f"
    done | xargs -0 -r sha256sum) | hash
}

# ---- Debian packages --------------------------------------------------------------------

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"

# deemed_installed writes an apt status file listing SCRIPT_ONLY_PKGS as installed.
deemed_installed() {
  local p
  for p in $SCRIPT_ONLY_PKGS; do
    apt-cache show --no-all-versions "$p" 2>/dev/null |
      awk -v RS= 'NR==1' | grep -E '^(Package|Version|Architecture|Provides|Multi-Arch):' ||
      die "apt knows no package $p: run apt-get update"
    printf 'Status: install ok installed\n\n'
  done >"$work/status"
}

# resolve <pkg>...: the packages to unpack, dependencies included, as name=version lines,
# resolved by apt itself against an empty system (but for SCRIPT_ONLY_PKGS).
resolve() {
  local out
  out=$(apt-get -qq -s -o Dir::State::status="$work/status" -o APT::Install-Recommends=false \
    -o APT::Install-Suggests=false install "$@" 2>&1) ||
    die "apt cannot resolve $*: $(echo "$out" | tail -3) (run apt-get update?)"
  echo "$out" | awk '/^Inst /{v=$3; sub(/^\(/, "", v); print $2 "=" v}' | sort
}

# deb_file <name=version>: the cached .deb of that version, if any.
deb_file() {
  local n=${1%%=*} v=${1#*=} f
  for f in "$DEBS/${n}_${v//:/%3a}_"*.deb; do [ -f "$f" ] && echo "$f" && return 0; done
  return 1
}

# fetch <name=version>...: downloads what is not cached yet (apt checks each file against
# the signed package lists).
fetch() {
  local nv missing=()
  for nv in "$@"; do deb_file "$nv" >/dev/null || missing+=("$nv"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  local dl; dl=$(mktemp -d "$DEBS/.download.XXXXXX")
  # _apt must be able to write where apt-get download puts the files.
  chown _apt "$dl" 2>/dev/null || true
  (cd "$dl" && apt-get -qq download "${missing[@]}") >"$work/download.log" 2>&1 ||
    { cat "$work/download.log" >&2; rm -rf "$dl"; die "apt-get download failed (run apt-get update?)"; }
  mv "$dl"/*.deb "$DEBS/"
  rmdir "$dl"
  log "downloaded ${#missing[@]} packages"
}

# new_root <dir>: an empty root with the merged /usr layout of bookworm and later.
new_root() {
  mkdir -p "$1/usr/bin" "$1/usr/sbin" "$1/usr/lib" "$1/usr/lib64"
  ln -s usr/bin "$1/bin"; ln -s usr/sbin "$1/sbin"; ln -s usr/lib "$1/lib"; ln -s usr/lib64 "$1/lib64"
}

# unpack <dir> <name=version>...: the packages' files into dir (no maintainer script runs),
# keeping the merged-/usr links, then drops documentation as Debian's slim images do
# (copyright files stay) and sets the alternatives.
unpack() {
  local dir=$1 nv f a; shift
  fetch "$@"
  for nv in "$@"; do
    f=$(deb_file "$nv") || die "no .deb for $nv"
    dpkg-deb --fsys-tarfile "$f" | tar -C "$dir" -x --keep-directory-symlink --no-same-owner ||
      die "unpacking $f failed"
  done
  rm -rf "$dir"/usr/share/{man,info,locale,lintian,linda,groff}
  if [ -d "$dir/usr/share/doc" ]; then
    find "$dir/usr/share/doc" ! -type d ! -name copyright -delete
    find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
  fi
  for a in $ALTERNATIVES; do
    [ -e "$dir${a%%=*}" ] || [ ! -e "$(dirname "$dir${a%%=*}")/${a#*=}" ] || ln -s "${a#*=}" "$dir${a%%=*}"
  done
}

# ca_bundle <dir>: /etc/ssl/certs/ca-certificates.crt from the unpacked ca-certificates, as
# update-ca-certificates makes it (every certificate, in name order).
ca_bundle() {
  local f
  mkdir -p "$1/etc/ssl/certs"
  for f in "$1"/usr/share/ca-certificates/*/*.crt; do
    cat "$f"
    [ -z "$(tail -c1 "$f")" ] || echo
  done >"$1/etc/ssl/certs/ca-certificates.crt"
  [ -s "$1/etc/ssl/certs/ca-certificates.crt" ] || die "no certificate in ca-certificates"
}

# users <dir> <home> <user name> <uid>: /etc/passwd and /etc/group with root, nobody and the
# image's user.
users() {
  local dir=$1 home=$2 name=$3 id=$4 shell=${5:-/bin/bash}
  mkdir -p "$dir/etc"
  printf '%s\n' "root:x:0:0:root:/root:$shell" "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin" \
    "$name:x:$id:$id:$name:$home:$shell" >"$dir/etc/passwd"
  printf '%s\n' "root:x:0:" "tty:x:5:" "staff:x:50:" "nogroup:x:65534:" "$name:x:$id:" >"$dir/etc/group"
}

nsswitch() {
  printf '%s\n' "passwd: files" "group: files" "shadow: files" "hosts: files dns" "networks: files" \
    "protocols: files" "services: files" "ethers: files" "rpc: files" >"$1/etc/nsswitch.conf"
}

# dirs <dir>: the directories every image has, with their modes.
dirs() {
  mkdir -p "$1"/{tmp,var/tmp,root,home,proc,sys,dev,run,etc}
  chmod 1777 "$1/tmp" "$1/var/tmp"
  chmod 0700 "$1/root"
}

# ---- images -----------------------------------------------------------------------------

# tools builds mkimage, pause and forward (static) once per run, when an image needs them.
tools() {
  [ -x "$work/bin/mkimage" ] && return 0
  (cd "$mod" && for c in mkimage pause forward; do
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$work/bin/$c" "./cmd/$c" || exit 1
  done) || die "building the image tools in $mod failed"
}

# debian_base: the rootfs shared by the sandboxd and python-runtime images, built once per run.
debian_base() {
  [ -d "$work/base" ] && return 0
  local pkgs
  pkgs=$(resolve $BASE_PKGS)
  echo "$pkgs" >"$work/base.packages"
  new_root "$work/base.tmp"
  # shellcheck disable=SC2086
  unpack "$work/base.tmp" $pkgs
  dirs "$work/base.tmp"
  ca_bundle "$work/base.tmp"
  nsswitch "$work/base.tmp"
  mv "$work/base.tmp" "$work/base"
}

# make_image <out> <name> <start> <check flags...> -- <build flags...>: builds with mkimage,
# checks the tarball reads back (mkimage check: go-containerregistry's validation and the
# files named), and only then moves it into place. start is when this image's build began.
make_image() {
  local out=$1 name=$2 t0=$3 checks=()
  shift 3
  while [ "$1" != -- ]; do checks+=("$1"); shift; done
  shift
  "$work/bin/mkimage" build -name "$name" -out "$out.tmp" "$@" || die "mkimage build $name failed"
  "$work/bin/mkimage" check -name "$name" "${checks[@]}" "$out.tmp" >&2 ||
    { rm -f "$out.tmp"; die "$out.tmp does not read back"; }
  mv "$out.tmp" "$out"
  log "built $name in $((SECONDS - t0))s: $out"
}

build_pause() { # <out>
  local t0=$SECONDS
  tools
  mkdir -p "$work/pause" && cp "$work/bin/pause" "$work/pause/pause"
  make_image "$1" "$PAUSE_IMAGE" "$t0" -want /pause=0:0 -- -layer "$work/pause" -entrypoint '["/pause"]' -user 65535:65535 -workdir /
}

build_forward() { # <out>
  local t0=$SECONDS
  tools
  mkdir -p "$work/forward" && cp "$work/bin/forward" "$work/forward/forward"
  make_image "$1" "$FORWARD_IMAGE" "$t0" -want /forward=0:0 -- -layer "$work/forward" -entrypoint '["/forward"]' -user 65532:65532 -workdir /
}

# build_sandboxd: upstream's packages/sandboxd/Dockerfile: the Debian base, sandboxd in
# /usr/local/bin, /workspace owned by 1000 as WORKDIR, USER 1000, ports 8080 and 9090. One
# addition: the python runtime's python3 layer (the same blob), so that a model's python
# (run_code) works in a sandboxd sandbox too; upstream's image has no interpreter beyond sh.
build_sandboxd() { # <out>
  local t0=$SECONDS l=$work/sandboxd
  tools; debian_base; python_layer
  mkdir -p "$l/usr/local/bin" "$l/workspace"
  cp "$SANDBOX_BIN/sandboxd" "$l/usr/local/bin/sandboxd"
  users "$l" /workspace sandbox 1000
  cp "$work/python.packages" "$work/packages"
  make_image "$1" "$SANDBOXD_IMAGE" "$t0" -want /usr/local/bin/sandboxd=0:0 -want /workspace=1000:1000 \
    -want /bin/bash -want /usr/bin/ps -want /usr/bin/setsid -want /usr/bin/python3 -want /etc/ssl/certs/ca-certificates.crt -want /tmp -- \
    -layer "$work/base" -layer "$work/python" -layer "$l" -owner /workspace=1000:1000 \
    -entrypoint '["/usr/local/bin/sandboxd"]' -user 1000 -workdir /workspace -env "$PATH_ENV" -env LANG=C.UTF-8 \
    -expose 8080/tcp -expose 9090/tcp
}

# python_layer: Debian's python3 and the python runtime's packages over the base, with their
# bytecode, in $work/python (once per run; shared by the python-runtime and sandboxd images).
python_layer() {
  [ ! -f "$work/python.packages" ] || return 0
  local py=$work/python pkgs extra
  [ "$(id -u)" = 0 ] || die "the python layer needs root (its bytecode is compiled in a chroot)"
  pkgs=$(resolve $BASE_PKGS $PYTHON_PKGS)
  extra=$(comm -13 "$work/base.packages" - <<<"$pkgs")
  new_root "$py"
  # shellcheck disable=SC2086
  unpack "$py" $extra
  mkdir -p "$py/usr/local/bin"
  printf '%s\n' '#!/usr/bin/python3' 'import sys' 'from uvicorn.main import main' 'sys.exit(main())' \
    >"$py/usr/local/bin/uvicorn"
  chmod 0755 "$py/usr/local/bin/uvicorn"
  compile_python "$py"
  echo "$pkgs" >"$work/python.packages"
}

# build_python: upstream's examples/python-runtime-sandbox/Dockerfile: WORKDIR /app holding
# main.py, owned by 1000, USER 1000, uvicorn on 8888. python:3.14-slim's python and pip
# packages become Debian's python3 and python3-* packages; uvicorn's console script, which
# pip would write and Debian does not ship, is written to /usr/local/bin as pip would.
build_python() { # <out>
  local t0=$SECONDS app=$work/app
  tools; debian_base; python_layer
  mkdir -p "$app/app"
  cp "$sbx_mod/examples/python-runtime-sandbox/main.py" "$app/app/main.py"
  chmod 0644 "$app/app/main.py"
  users "$app" /app sandbox 1000
  cp "$work/python.packages" "$work/packages"
  make_image "$1" "$PYTHON_IMAGE" "$t0" -want /app/main.py=1000:1000 -want /usr/bin/python3 \
    -want /usr/local/bin/uvicorn -want /bin/sh -want /usr/lib/python3/dist-packages/fastapi/__pycache__ -- -layer "$work/base" -layer "$work/python" -layer "$app" -owner /app=1000:1000 \
    -cmd '["uvicorn","main:app","--host","0.0.0.0","--port","8888","--log-level","trace"]' \
    -user 1000 -workdir /app -env "$PATH_ENV" -env LANG=C.UTF-8 -expose 8888/tcp
}

# compile_python <layer dir>: the .pyc files Debian's postinst (py3compile) would write, made
# by the image's own python in a chroot of base + layer, written into the layer. Hash-based
# (checked-hash), so the fixed file times of the layers leave them valid: without them every
# start of the runtime compiles fastapi, pydantic and uvicorn again.
compile_python() {
  local layer=$1 merged=$work/merged
  rm -rf "$merged"
  cp -al "$work/base" "$merged"
  cp -alf "$layer/." "$merged/"
  chroot "$merged" /usr/bin/python3 -m compileall -q --invalidation-mode checked-hash \
    /usr/lib/python3/dist-packages /usr/lib/python3.*/ >"$work/compile.log" 2>&1 ||
    { cat "$work/compile.log" >&2; die "compiling the python runtime's bytecode failed"; }
  (cd "$merged" && find usr/lib/python3* -name '*.pyc' -print0 | tar --null -T - -c) | tar -C "$layer" -x
  rm -rf "$merged"
}

# static_base: the rootfs of gcr.io/distroless/static:nonroot (base-files, netbase, tzdata,
# media-types, the CA bundle, passwd/group with nonroot 65532, /tmp, /home/nonroot), built
# once per run and shared by the CoreDNS and metrics-server images.
static_base() {
  [ -d "$work/static" ] && return 0
  local s=$work/static.tmp pkgs p
  pkgs=$(for p in $STATIC_PKGS ca-certificates; do
    apt-cache show --no-all-versions "$p" | awk '/^Version:/{print "'"$p"'=" $2; exit}'
  done)
  new_root "$s"
  # shellcheck disable=SC2086
  unpack "$s" $(grep -v '^ca-certificates=' <<<"$pkgs")
  # Only the bundle of ca-certificates, as distroless takes it.
  new_root "$work/ca"
  unpack "$work/ca" "$(grep '^ca-certificates=' <<<"$pkgs")"
  ca_bundle "$work/ca"
  mkdir -p "$s/etc/ssl/certs" "$s/usr/share/doc/ca-certificates"
  cp "$work/ca/etc/ssl/certs/ca-certificates.crt" "$s/etc/ssl/certs/"
  cp "$work/ca/usr/share/doc/ca-certificates/copyright" "$s/usr/share/doc/ca-certificates/"
  dirs "$s"
  mkdir -p "$s/home/nonroot" && chmod 0700 "$s/home/nonroot"
  users "$s" /home/nonroot nonroot 65532 /sbin/nologin
  nsswitch "$s"
  echo "$pkgs" >"$work/static.packages"
  mv "$s" "$work/static"
}

# build_server: the image hack/image.sh builds with ko (the one recipe; a release publishes the
# same), this machine's platform of it, as a tarball named as deploy/deployment.yaml names it.
build_server() { # <out>
  local t0=$SECONDS b=$work/server ref
  tools
  ref=$("$repo/hack/image.sh" "$b") || die "hack/image.sh failed"
  "$work/bin/mkimage" from-layout -layout "$b/layout" -name "$SERVER_IMAGE" -out "$1.tmp" >/dev/null ||
    die "mkimage from-layout $b/layout failed"
  "$work/bin/mkimage" check -name "$SERVER_IMAGE" -want /ko-app/k8s-sandbox-mcp=0:0 -want /home/nonroot=65532:65532 \
    -want /etc/passwd -want /tmp "$1.tmp" >&2 || { rm -f "$1.tmp"; die "$1.tmp does not read back"; }
  mv "$1.tmp" "$1"
  log "built $SERVER_IMAGE (index ${ref#* }) in $((SECONDS - t0))s: $1"
}

# build_coredns: upstream's Dockerfile: /coredns on distroless static:nonroot, USER
# nonroot, port 53. Upstream also gives the binary cap_net_bind_service as a file
# capability; the layers here carry no xattrs, so the cluster's Deployment lets the pod bind
# 53 with the namespaced sysctl net.ipv4.ip_unprivileged_port_start instead.
build_coredns() { # <out>
  local t0=$SECONDS l=$work/coredns
  tools; static_base
  mkdir -p "$l" && cp "$STACK_BIN/coredns" "$l/coredns"
  cp "$work/static.packages" "$work/packages"
  make_image "$1" "$COREDNS_IMAGE" "$t0" -want /coredns=0:0 -want /etc/ssl/certs/ca-certificates.crt -- \
    -layer "$work/static" -layer "$l" -owner /home/nonroot=65532:65532 \
    -entrypoint '["/coredns"]' -user 65532:65532 -workdir / -env "$PATH_ENV" -expose 53/tcp -expose 53/udp
}

# build_metrics_server: upstream's Dockerfile: /metrics-server on distroless static, USER 65534.
build_metrics_server() { # <out>
  local t0=$SECONDS l=$work/metrics-server
  tools; static_base
  mkdir -p "$l" && cp "$STACK_BIN/metrics-server" "$l/metrics-server"
  cp "$work/static.packages" "$work/packages"
  make_image "$1" "$METRICS_SERVER_IMAGE" "$t0" -want /metrics-server=0:0 -want /tmp -- \
    -layer "$work/static" -layer "$l" -owner /home/nonroot=65532:65532 \
    -entrypoint '["/metrics-server"]' -user 65534 -workdir / -env "$PATH_ENV"
}

# ---- main -------------------------------------------------------------------------------

for tool in go apt-get apt-cache dpkg-deb tar sha256sum flock; do
  command -v "$tool" >/dev/null || die "missing $tool"
done
wanted=${*:-$ALL_IMAGES}
words=$wanted wanted=""
for img in $words; do
  [ "$img" = sandbox ] && img=$SANDBOX_IMAGES
  wanted+=" $img"
done
for img in $wanted; do
  [[ " $ALL_IMAGES " == *" $img "* ]] || die "unknown image $img (one of: $ALL_IMAGES; or sandbox)"
done
DEBS=$IMAGES_DIR/debs
mkdir -p "$DEBS"
exec 8>"$IMAGES_DIR/.lock"
flock 8
# What a run killed midway left behind (no other run is active while we hold the lock).
rm -rf "$IMAGES_DIR"/.work.* "$IMAGES_DIR"/.mkimage-* "$IMAGES_DIR"/*.tar.tmp "$DEBS"/.download.*

# What every image depends on: this script, the image tools' sources and the Go toolchain.
tools_key=$( { sha256sum <"$here/images.sh"; tree_hash "$mod" \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \); go version; } | hash)
sbx_mod=""
if [[ " $wanted " == *" python-runtime "* ]]; then
  sbx_mod=$(cd "$SANDBOX_MOD" && go list -m -f '{{.Dir}}' sigs.k8s.io/agent-sandbox) && [ -d "$sbx_mod" ] ||
    die "sigs.k8s.io/agent-sandbox $AGENT_SANDBOX_VERSION is not in the module cache: run hack/localstack/build.sh"
fi
key_of() { # <image>: the cache key of its tarball
  case $1 in
  pause) echo "$tools_key $PAUSE_IMAGE" ;;
  forward) echo "$tools_key $FORWARD_IMAGE" ;;
  sandboxd)
    [ -x "$SANDBOX_BIN/sandboxd" ] || die "$SANDBOX_BIN/sandboxd is missing: run hack/localstack/build.sh"
    echo "$tools_key $SANDBOXD_IMAGE $codename $(sha256sum <"$SANDBOX_BIN/sandboxd")" ;;
  python-runtime)
    echo "$tools_key $PYTHON_IMAGE $codename $(sha256sum <"$sbx_mod/examples/python-runtime-sandbox/main.py")" ;;
  server) echo "$tools_key $SERVER_IMAGE $KO_VERSION $(server_src_hash)" ;;
  coredns | metrics-server)
    local bin=$STACK_BIN/$1 img=$COREDNS_IMAGE
    [ "$1" = coredns ] || img=$METRICS_SERVER_IMAGE
    [ -x "$bin" ] || die "$bin is missing: run hack/localstack/build-node.sh"
    echo "$tools_key $img $codename $(sha256sum <"$bin")" ;;
  esac | hash
}

work=""
trap '[ -z "$work" ] || rm -rf "$work"' EXIT
for img in $wanted; do
  case $img in
  pause) name=$PAUSE_IMAGE ;; forward) name=$FORWARD_IMAGE ;; sandboxd) name=$SANDBOXD_IMAGE ;;
  python-runtime) name=$PYTHON_IMAGE ;; server) name=$SERVER_IMAGE ;;
  coredns) name=$COREDNS_IMAGE ;; metrics-server) name=$METRICS_SERVER_IMAGE ;;
  esac
  tag=${name##*:}
  out=$IMAGES_DIR/$img-$tag-$(key_of "$img").tar
  if [ ! -f "$out" ]; then
    if [ -z "$work" ]; then
      work=$(mktemp -d "$IMAGES_DIR/.work.XXXXXX")
      deemed_installed
    fi
    rm -f "$work/packages"
    case $img in
    pause) build_pause "$out" ;; forward) build_forward "$out" ;; sandboxd) build_sandboxd "$out" ;;
    python-runtime) build_python "$out" ;; server) build_server "$out" ;;
    coredns) build_coredns "$out" ;; metrics-server) build_metrics_server "$out" ;;
    esac
    # The Debian packages (name=version) an image was made of, for the record.
    [ ! -f "$work/packages" ] || mv "$work/packages" "$out.packages"
    # Older builds of this image: keep the two most recent besides this one (other clones
    # may still use theirs), drop the rest.
    n=0
    for old in $(ls -t "$IMAGES_DIR/$img-$tag-"*.tar); do
      [ "$old" = "$out" ] && continue
      n=$((n + 1))
      [ $n -le 2 ] || rm -f "$old" "$old.packages"
    done
  fi
  touch "$out"
  echo "$name $out"
done
