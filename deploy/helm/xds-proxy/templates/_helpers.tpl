{{/* The chart's name, or nameOverride. */}}
{{- define "xds-proxy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: fullnameOverride, or the release's name with the chart's unless it holds it. */}}
{{- define "xds-proxy.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "xds-proxy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "xds-proxy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "xds-proxy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "xds-proxy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: xds-cache
{{- end }}

{{- define "xds-proxy.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The ports the proxy listens on, as its config says, or its defaults. */}}
{{- define "xds-proxy.xdsPort" -}}
{{- index .Values.config "xds-port" | default 18000 | int }}
{{- end }}
{{- define "xds-proxy.monitoringPort" -}}
{{- index .Values.config "monitoring-port" | default 19000 | int }}
{{- end }}

{{/* Where each TLS source is mounted. */}}
{{- define "xds-proxy.tlsDir" -}}
{{- printf "/etc/xds-proxy-tls/%s" . }}
{{- end }}

{{/*
The xDS port's TLS sources, tls.server and tls.clientCa, as a dict (server, clientCa); with
tls.plaintext, empty ones.
*/}}
{{- define "xds-proxy.xdsTls" -}}
{{- if .Values.tls.plaintext }}
{{- toYaml (dict "server" (dict "secretName" "") "clientCa" (dict "secretName" "" "configMapName" "" "key" "ca.crt")) }}
{{- else }}
{{- toYaml (dict "server" .Values.tls.server "clientCa" .Values.tls.clientCa) }}
{{- end }}
{{- end }}

{{/* The upstream node template file: its text is the ConfigMap's data and, by checksum, the pods' annotation. */}}
{{- define "xds-proxy.upstreamNode" -}}
{{- toYaml .Values.upstreamNode }}
{{ end }}

{{/* Where the upstream node template is, in the config's ConfigMap. */}}
{{- define "xds-proxy.upstreamNodePath" -}}
/etc/xds-proxy/upstream-node.yaml
{{- end }}

{{/*
The config file: .Values.config with the TLS file keys pointing at the mounted files, and
upstream-node at upstreamNode's file. Its text is both the ConfigMap's data and, through its
checksum, the pods' annotation.
*/}}
{{- define "xds-proxy.config" -}}
{{- $config := deepCopy .Values.config }}
{{- range $key := list "tls-cert" "tls-key" "tls-client-ca" "upstream-ca" "upstream-cert" "upstream-key" "upstream-token-file" }}
{{- if hasKey $config $key }}
{{- fail (printf "config.%s is set from tls.* (the mounted Secret's file); do not set it in config" $key) }}
{{- end }}
{{- end }}
{{- $xdsTls := include "xds-proxy.xdsTls" . | fromYaml }}
{{- if $xdsTls.server.secretName }}
{{- $_ := set $config "tls-cert" (printf "%s/tls.crt" (include "xds-proxy.tlsDir" "server")) }}
{{- $_ := set $config "tls-key" (printf "%s/tls.key" (include "xds-proxy.tlsDir" "server")) }}
{{- end }}
{{- if or $xdsTls.clientCa.secretName $xdsTls.clientCa.configMapName }}
{{- if not $xdsTls.server.secretName }}
{{- fail "tls.clientCa needs tls.server: mutual TLS is TLS first" }}
{{- end }}
{{- $_ := set $config "tls-client-ca" (printf "%s/ca.crt" (include "xds-proxy.tlsDir" "client-ca")) }}
{{- end }}
{{- with .Values.tls }}
{{- if or .upstreamCa.secretName .upstreamCa.configMapName }}
{{- $_ := set $config "upstream-ca" (printf "%s/ca.crt" (include "xds-proxy.tlsDir" "upstream-ca")) }}
{{- end }}
{{- if .upstreamClient.secretName }}
{{- $_ := set $config "upstream-cert" (printf "%s/tls.crt" (include "xds-proxy.tlsDir" "upstream-client")) }}
{{- $_ := set $config "upstream-key" (printf "%s/tls.key" (include "xds-proxy.tlsDir" "upstream-client")) }}
{{- end }}
{{- if .upstreamToken.audience }}
{{- $upstreamTls := or .upstreamCa.secretName .upstreamCa.configMapName .upstreamClient.secretName (eq (toString (index $config "upstream-tls")) "true") (eq (toString (index $config "upstream-token-over-plaintext")) "true") }}
{{- if not $upstreamTls }}
{{- fail "tls.upstreamToken is sent only over TLS to the control plane: give tls.upstreamCa (or config.upstream-tls: true)" }}
{{- end }}
{{- $_ := set $config "upstream-token-file" (printf "%s/token" (include "xds-proxy.tlsDir" "upstream-token")) }}
{{- end }}
{{- end }}
{{- /* A san: part is proven by a client certificate: without mutual TLS no client could be grouped. */}}
{{- if not (hasKey $config "tls-client-ca") }}
{{- $parts := index $config "node-group-key" | default list }}
{{- if not (kindIs "slice" $parts) }}{{ $parts = list $parts }}{{ end }}
{{- range $part := $parts }}
{{- if contains "san:" (toString $part) }}
{{- fail (printf "config.node-group-key part %s needs client certificates, and the xDS port has none (tls.plaintext, or no tls.clientCa): give parts clients choose, such as metadata:NAMESPACE and metadata:SERVICE_ACCOUNT, knowing that any client then chooses its group" $part) }}
{{- end }}
{{- end }}
{{- end }}
{{- if hasKey $config "upstream-node" }}
{{- fail "config.upstream-node is set from upstreamNode (the ConfigMap's upstream-node.yaml); give the node there" }}
{{- end }}
{{- if .Values.upstreamNode }}
{{- if hasKey $config "upstream-node-id" }}
{{- fail "config.upstream-node-id and upstreamNode are both given: give the id in upstreamNode.id, or set upstreamNode: {}" }}
{{- end }}
{{- $_ := set $config "upstream-node" (include "xds-proxy.upstreamNodePath" .) }}
{{- end }}
{{- range $key := list "state-dir" "state-include-secrets" }}
{{- if hasKey $config $key }}
{{- fail (printf "config.%s is set from stateDir.*; do not set it in config" $key) }}
{{- end }}
{{- end }}
{{- if .Values.stateDir.enabled }}
{{- $_ := set $config "state-dir" "/var/lib/xds-proxy/state" }}
{{- if .Values.stateDir.includeSecrets }}
{{- $_ := set $config "state-include-secrets" true }}
{{- end }}
{{- end }}
{{- toYaml $config }}
{{ end }}

{{/* config.drain-time in whole seconds (rounded up). */}}
{{- define "xds-proxy.drainSeconds" -}}
{{- $d := toString (index .Values.config "drain-time" | default "15s") }}
{{- if regexMatch "^[0-9]+ms$" $d }}{{ add1 (div (trimSuffix "ms" $d | int) 1000) }}
{{- else if regexMatch "^[0-9]+s$" $d }}{{ trimSuffix "s" $d | int }}
{{- else if regexMatch "^[0-9]+m$" $d }}{{ mul (trimSuffix "m" $d | int) 60 }}
{{- else if regexMatch "^[0-9]+h$" $d }}{{ mul (trimSuffix "h" $d | int) 3600 }}
{{- else }}{{ fail (printf "config.drain-time %q is not a duration such as 500ms, 15s, 5m or 1h" $d) }}
{{- end }}
{{- end }}

{{- define "xds-proxy.terminationGracePeriodSeconds" -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- add .Values.preStopSleepSeconds (include "xds-proxy.drainSeconds" . | int) 10 }}
{{- else }}
{{- .Values.terminationGracePeriodSeconds | int }}
{{- end }}
{{- end }}

{{/*
A CA bundle's volume, its key mounted as ca.crt: from the ConfigMap if one is named (so that naming
one replaces a default Secret), else from the Secret.
*/}}
{{- define "xds-proxy.caVolume" -}}
{{- if .source.configMapName }}
- name: {{ .name }}
  configMap:
    name: {{ .source.configMapName }}
    items:
      - key: {{ .source.key }}
        path: ca.crt
{{- else if .source.secretName }}
- name: {{ .name }}
  secret:
    secretName: {{ .source.secretName }}
    items:
      - key: {{ .source.key }}
        path: ca.crt
{{- end }}
{{- end }}
