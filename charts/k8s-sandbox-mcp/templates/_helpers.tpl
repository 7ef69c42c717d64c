{{/* The name of every object: the release name, with the chart's name appended unless it holds it. */}}
{{- define "k8s-sandbox-mcp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Selector labels. app.kubernetes.io/name is always the chart's name: the example SandboxTemplates'
NetworkPolicy admits ingress to sandboxes from pods carrying app.kubernetes.io/name: k8s-sandbox-mcp.
*/}}
{{- define "k8s-sandbox-mcp.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object: the selector labels and Helm's. */}}
{{- define "k8s-sandbox-mcp.labels" -}}
{{ include "k8s-sandbox-mcp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Where calls without a namespace go, and where /readyz lists claims. */}}
{{- define "k8s-sandbox-mcp.defaultNamespace" -}}
{{- first .Values.namespaces -}}
{{- end -}}

{{- define "k8s-sandbox-mcp.tokensSecret" -}}
{{- .Values.auth.tokens.secretName | default (printf "%s-tokens" (include "k8s-sandbox-mcp.fullname" .)) -}}
{{- end -}}

{{- define "k8s-sandbox-mcp.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
A RoleBinding of the server's ServiceAccount to a ClusterRole in a namespace:
dict "root" $ "name" <ClusterRole and binding name> "namespace" <namespace>.
*/}}
{{- define "k8s-sandbox-mcp.roleBinding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  labels:
    {{- include "k8s-sandbox-mcp.labels" .root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .name }}
subjects:
- kind: ServiceAccount
  name: {{ include "k8s-sandbox-mcp.fullname" .root }}
  namespace: {{ .root.Release.Namespace }}
{{- end -}}

{{/* Checks across values that values.schema.json cannot express. */}}
{{- define "k8s-sandbox-mcp.validate" -}}
{{- if and .Values.pins.namespace (not (has .Values.pins.namespace .Values.namespaces)) -}}
{{- fail (printf "pins.namespace %q must be one of namespaces (%s)" .Values.pins.namespace (join ", " .Values.namespaces)) -}}
{{- end -}}
{{- $c := .Values.connection.sandboxd -}}
{{- if and (eq .Values.connection.type "sandboxd-in-cluster") $c.restPort $c.grpcPort (eq (int $c.restPort) (int $c.grpcPort)) -}}
{{- fail "connection.sandboxd.restPort and grpcPort must differ" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- fail (printf "autoscaling.minReplicas (%d) must not exceed maxReplicas (%d)" (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- end -}}
