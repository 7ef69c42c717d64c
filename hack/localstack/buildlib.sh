# Build helpers of build.sh (control plane, agent-sandbox) and build-node.sh (the real node),
# sourced after versions.sh. Each binary comes from a nested module under build/ that pins it.

# build <module dir> <out dir> <ldflags> <pkg=name>... builds each package into <out dir>/<name>,
# skipping names already there: the out dir is keyed by versions, so what exists is current.
# The packages go to one `go build` (one package load, and the go command overlaps one
# binary's link with the next one's compiles on both cores, where a build per binary waited
# for each link: a cold build is the longest part of a cold CI run). Binaries appear only once
# complete (built in a temporary folder, then renamed), so an interrupted build is redone next
# time. BUILD_TAGS (space separated) adds build tags; CGO_ENABLED and GOFLAGS from the
# environment apply as usual.
build() {
  local mod=$1 out=$2 ldflags=$3
  shift 3
  local todo=() names=() spec
  for spec in "$@"; do
    local pkg=${spec%%=*} name=${spec##*=}
    [ -x "$out/$name" ] && continue
    todo+=("$pkg")
    names+=("$name")
  done
  [ ${#todo[@]} -eq 0 ] && return 0
  mkdir -p "$out"
  local tmp
  tmp=$(mktemp -d "$out/.build.XXXXXX")
  echo "localstack: building ${names[*]} (${BUILD_HINT:-cold: up to ~20 min on 2 cores})" >&2
  local start=$SECONDS i
  if ! (cd "$mod" && go build -trimpath -tags "${BUILD_TAGS:-}" -ldflags "$ldflags" -o "$tmp/" "${todo[@]}"); then
    rm -rf "$tmp"
    echo "localstack: error: building ${names[*]} (${todo[*]} in $mod) failed" >&2
    return 1
  fi
  for i in "${!todo[@]}"; do
    mv "$tmp/$(exec_name "${todo[$i]}")" "$out/${names[$i]}"
  done
  rm -rf "$tmp"
  echo "localstack: built ${names[*]} ($((SECONDS - start))s)" >&2
}

# settings_build <module dir> <out dir> <ldflags> <pkg=name>... is build with the stack's cgo
# setting and tags (versions.sh says why), plus STACK_EXTRA_TAGS: every module whose packages
# should come from go's build cache as the stack compiled them.
settings_build() {
  CGO_ENABLED=$STACK_CGO_ENABLED BUILD_TAGS="$STACK_TAGS${STACK_EXTRA_TAGS:+ $STACK_EXTRA_TAGS}" build "$@"
}

# stack_build <ldflags> <pkg=name>... builds from build/stack into $STACK_BIN.
stack_build() {
  settings_build "$STACK_MOD" "$STACK_BIN" "$@"
}

# exec_name <package> prints the file name go build -o <dir>/ gives the package's binary: its
# last path element, or the one before a major-version suffix (go.etcd.io/etcd/server/v3: server).
exec_name() {
  local pkg=$1 last=${1##*/}
  if [[ $last =~ ^v[0-9]+$ && $pkg == */* ]]; then
    pkg=${pkg%/*}
    last=${pkg##*/}
  fi
  echo "$last"
}

# kube_ldflags prints the ldflags of the Kubernetes binaries: stripped, and stamped with
# $KUBE_VERSION as upstream's release build does, or /version and --version say v0.0.0-master.
kube_ldflags() {
  local kv=$KUBE_VERSION p flags="-s -w"
  local major=${kv#v}
  major=${major%%.*}
  local minor
  minor=$(echo "$kv" | cut -d. -f2)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=$kv -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$flags"
}
