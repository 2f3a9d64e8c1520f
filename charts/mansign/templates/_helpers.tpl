{{/* The prefix of every object name: namePrefix, or the release name. */}}
{{- define "mansign.prefix" -}}
{{- .Values.namePrefix | default .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* The Deployment, Service, PDB and webhook configuration: <prefix>-webhook. */}}
{{- define "mansign.fullname" -}}
{{- printf "%s-webhook" (include "mansign.prefix" .) -}}
{{- end -}}

{{- define "mansign.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "mansign.fullname" .) -}}
{{- end -}}

{{- define "mansign.policyConfigMap" -}}
{{- .Values.policy.existingConfigMap | default (printf "%s-policy" (include "mansign.prefix" .)) -}}
{{- end -}}

{{- define "mansign.tlsSecret" -}}
{{- .Values.tls.existingSecret | default (printf "%s-tls" (include "mansign.fullname" .)) -}}
{{- end -}}

{{/*
Selector labels. app.kubernetes.io/name is the one deploy/ uses; app.kubernetes.io/instance
keeps two releases in one namespace apart (README.md: labels).
*/}}
{{- define "mansign.selectorLabels" -}}
app.kubernetes.io/name: mansign-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object: deploy/'s two plus Helm's usual ones. */}}
{{- define "mansign.labels" -}}
{{ include "mansign.selectorLabels" . }}
app.kubernetes.io/part-of: mansign
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "mansign.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/*
Durations as the server reads them (250ms, 8s, 2m, or seconds), in milliseconds, so that the
chart can refuse a server deadline that is not below the webhook's timeoutSeconds.
*/}}
{{- define "mansign.millis" -}}
{{- $d := toString . -}}
{{- if hasSuffix "ms" $d -}}{{ trimSuffix "ms" $d | int64 }}
{{- else if hasSuffix "s" $d -}}{{ mul (trimSuffix "s" $d | int64) 1000 }}
{{- else if hasSuffix "m" $d -}}{{ mul (trimSuffix "m" $d | int64) 60000 }}
{{- else -}}{{ mul ($d | int64) 1000 }}
{{- end -}}
{{- end -}}
