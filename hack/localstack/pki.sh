# The stack's certificates and kubeconfigs (sourced by stack.sh after lib.sh). Made once per
# cache; PKI_VERSION changes when what they must hold changes.
PKI_VERSION=2

# cert <name> <subject> <extensions> [<CA>]: a key and a certificate signed by <CA> (<CA>.crt and
# <CA>.key; default the stack's CA).
cert() {
  local name=$1 subj=$2 ext=$3 ca=${4:-ca}
  openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null &&
    openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -out "$name.crt" -days 3650 \
      -extfile <(printf '%b\nkeyUsage=digitalSignature,keyEncipherment' "$ext") 2>/dev/null &&
    rm -f "$name.csr" || die "signing the $name certificate failed"
}

# kubeconfig <file> <user cert name>
kubeconfig() {
  local b64="base64 -w0"
  cat >"$1.tmp" <<EOC
apiVersion: v1
kind: Config
clusters:
- name: localstack
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $($b64 <"$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $($b64 <"$PKI/$2.crt")
    client-key-data: $($b64 <"$PKI/$2.key")
contexts:
- name: localstack
  context:
    cluster: localstack
    user: $2
    namespace: default
current-context: localstack
EOC
  chmod 600 "$1.tmp"
  mv "$1.tmp" "$1"
}

make_pki() {
  mkdir -p "$PKI"
  if [ "$(cat "$PKI/done" 2>/dev/null)" != "$PKI_VERSION" ]; then
    find "$PKI" -mindepth 1 -delete
    (
      cd "$PKI"
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=localstack-ca 2>/dev/null
      openssl req -x509 -newkey rsa:2048 -nodes -keyout front-proxy-ca.key -out front-proxy-ca.crt -days 3650 \
        -subj /CN=localstack-front-proxy-ca 2>/dev/null
      local svc=DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
      cert apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1,DNS:localhost,$svc\nextendedKeyUsage=serverAuth"
      cert admin "/O=system:masters/CN=localstack-admin" extendedKeyUsage=clientAuth
      # Each component its own identity, the one the bootstrap RBAC policy grants its rights to.
      cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "subjectAltName=IP:$NODE_IP\nextendedKeyUsage=clientAuth,serverAuth"
      cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" extendedKeyUsage=clientAuth
      cert kube-controller-manager /CN=system:kube-controller-manager extendedKeyUsage=clientAuth
      cert kube-scheduler /CN=system:kube-scheduler extendedKeyUsage=clientAuth
      cert kube-proxy /CN=system:kube-proxy extendedKeyUsage=clientAuth
      cert front-proxy-client /CN=front-proxy-client extendedKeyUsage=clientAuth front-proxy-ca
      cert metrics-server /CN=metrics-server \
        "subjectAltName=DNS:metrics-server.kube-system.svc,IP:$METRICS_IP\nextendedKeyUsage=serverAuth"
      openssl genrsa -out sa.key 2048 2>/dev/null
      openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
      chmod 600 ./*.key
      echo "$PKI_VERSION" >done
    )
  fi
  kubeconfig "$KUBECONFIG" admin
  local c
  for c in kubelet kube-controller-manager kube-scheduler kube-proxy; do kubeconfig "$PKI/$c.kubeconfig" "$c"; done
}
