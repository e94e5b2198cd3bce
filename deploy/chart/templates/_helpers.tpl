{{/* The chart's name. */}}
{{- define "chartreg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's object names. */}}
{{- define "chartreg.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* What selects the pods. */}}
{{- define "chartreg.selectorLabels" -}}
app.kubernetes.io/name: {{ include "chartreg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every object's labels. */}}
{{- define "chartreg.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "chartreg.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* What the server's port carries, and the name of its ports: `https` with TLS, else `http`. */}}
{{- define "chartreg.protocol" -}}
{{- if .Values.tls.enabled }}https{{ else }}http{{ end -}}
{{- end -}}

{{/* The probes' scheme. */}}
{{- define "chartreg.scheme" -}}
{{- include "chartreg.protocol" . | upper -}}
{{- end -}}

{{/* The Service's port: service.port, else the scheme's own (443 with TLS, 80 without). */}}
{{- define "chartreg.servicePort" -}}
{{- if .Values.service.port }}{{ int .Values.service.port }}{{ else }}{{ ternary 443 80 .Values.tls.enabled }}{{ end -}}
{{- end -}}

{{/* Where clients reach the Service: NAME.NAMESPACE.svc, with its port unless that is the
scheme's own. */}}
{{- define "chartreg.address" -}}
{{- $port := include "chartreg.servicePort" . | int -}}
{{- printf "%s.%s.svc" .Values.service.name .Release.Namespace -}}
{{- if ne $port (ternary 443 80 .Values.tls.enabled) }}:{{ $port }}{{ end -}}
{{- end -}}

{{/* The pod's grace period: the server's shutdown delay and timeout, and 5 s to exit. */}}
{{- define "chartreg.terminationGracePeriodSeconds" -}}
{{- add .Values.shutdown.delaySeconds .Values.shutdown.timeoutSeconds 5 -}}
{{- end -}}

{{/* Values that cannot work as given fail the install, saying what to set. */}}
{{- define "chartreg.validate" -}}
{{- if and .Values.tls.certManager.enabled (not .Values.tls.enabled) -}}
{{- fail "tls.certManager.enabled=true needs tls.enabled=true: cert-manager would make the secret tls.secretName, but chartreg serves HTTPS from it only with TLS on; set tls.enabled=true as well (or tls.certManager.enabled=false for plain HTTP)" -}}
{{- end -}}
{{- if and .Values.mirrorConfig.enabled (not .Values.mirrorConfig.url) -}}
{{- fail "mirrorConfig.enabled=true needs mirrorConfig.url: the http(s)://HOST[:PORT] workload nodes reach this Service at (a LoadBalancer or NodePort address; the Service's DNS name does not resolve on nodes)" -}}
{{- end -}}
{{- range .Values.extraArgs -}}
{{- if regexMatch "^--shutdown-(delay|timeout)(=|$)" . -}}
{{- fail (printf "extraArgs has %q: set shutdown.delaySeconds and shutdown.timeoutSeconds instead (the chart passes --shutdown-delay and --shutdown-timeout from them, and the server refuses a flag given twice)" .) -}}
{{- end -}}
{{- end -}}
{{- range .Values.extraEnv -}}
{{- if has .name (list "CHARTREG_SHUTDOWN_DELAY" "CHARTREG_SHUTDOWN_TIMEOUT") -}}
{{- fail (printf "extraEnv sets %s: set shutdown.delaySeconds and shutdown.timeoutSeconds instead (the chart passes them as flags, which win over the variable)" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
