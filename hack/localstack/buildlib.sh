# Build helpers of build.sh (control plane, agent-sandbox) and build-node.sh (the real node),
# sourced after versions.sh. Each binary comes from a nested module under build/ that pins it.

# build <module dir> <out dir> <ldflags> <pkg=name>... builds each package into <out dir>/<name>,
# skipping names already there: the out dir is keyed by versions, so what exists is current.
# A binary appears only once complete (built in a temporary file, then renamed), so an
# interrupted build is redone next time. BUILD_TAGS (space separated) adds build tags;
# CGO_ENABLED and GOFLAGS from the environment apply as usual.
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
  local start=$SECONDS i t
  for i in "${!todo[@]}"; do
    t=$SECONDS
    if ! (cd "$mod" && go build -trimpath -tags "${BUILD_TAGS:-}" -ldflags "$ldflags" -o "$tmp/${names[$i]}" "${todo[$i]}"); then
      rm -rf "$tmp"
      echo "localstack: error: building ${names[$i]} (${todo[$i]} in $mod) failed" >&2
      return 1
    fi
    mv "$tmp/${names[$i]}" "$out/${names[$i]}"
    echo "localstack: built ${names[$i]} ($((SECONDS - t))s; $((SECONDS - start))s so far)" >&2
  done
  rmdir "$tmp" 2>/dev/null || true
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
