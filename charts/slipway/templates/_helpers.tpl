{{- define "slipway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "slipway.fullname" -}}
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

{{- define "slipway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slipway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "slipway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "slipway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "slipway.serviceAccountName" -}}
{{- default (include "slipway.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* The egress gate's Service: sandbox pods dial its ClusterIP (they resolve no names). */}}
{{- define "slipway.egressService" -}}
{{- printf "%s-egress" (include "slipway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "slipway.apiKeySecret" -}}
{{- default (printf "%s-api-key" (include "slipway.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{- define "slipway.pvcName" -}}
{{- default (printf "%s-data" (include "slipway.fullname" .)) .Values.store.persistence.existingClaim }}
{{- end }}

{{- define "slipway.usesPvc" -}}
{{- if and (eq .Values.store.backend "sqlite") .Values.store.persistence.enabled }}true{{ end }}
{{- end }}

{{- define "slipway.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* http or https: Slipway serves TLS itself when auth.tls.existingSecret is set. */}}
{{- define "slipway.scheme" -}}
{{- if .Values.auth.tls.existingSecret }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}
