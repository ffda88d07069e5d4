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

{{/* The Secret holding each template's enroll key (entry = template name). */}}
{{- define "slipway.enrollSecret" -}}
{{- printf "%s-sandbox-enroll" (include "slipway.fullname" .) }}
{{- end }}

{{/*
A template's SandboxTemplate spec, as YAML; called with (dict "root" $ "template" "node"). Exactly
what sandboxTemplate() of src/runtime/kubernetes/sandbox-template.ts builds with service links on
(the chart test compares them): the gate is the egress Service's service-link env vars, which the
kubelet expands, since sandboxes resolve no names and its ClusterIP is unknown before install.
*/}}
{{- define "slipway.sandboxTemplateSpec" -}}
{{- $v := .root.Values.sandboxes }}
{{- $egress := include "slipway.egressService" .root | upper | replace "-" "_" }}
{{- $memory := int $v.memoryLimitMB }}
podTemplate:
  metadata:
    labels:
      app.kubernetes.io/managed-by: slipway
      slipway.dev/sandbox: "true"
      slipway.dev/template: {{ .template }}
  spec:
    automountServiceAccountToken: false
    enableServiceLinks: true
    restartPolicy: Never
    securityContext:
      runAsNonRoot: true
      runAsUser: 65532
      runAsGroup: 65532
      fsGroup: 65532
      seccompProfile:
        type: RuntimeDefault
    containers:
      - name: agent
        image: {{ $v.image | quote }}
        command: [node, /opt/slipway/agent.mjs]
        env:
          - name: SLIPWAY_TEMPLATE
            value: {{ .template }}
          - name: SLIPWAY_ENROLL_KEY
            valueFrom:
              secretKeyRef:
                name: {{ include "slipway.enrollSecret" .root }}
                key: {{ .template }}
          - name: POD_IP
            valueFrom:
              fieldRef:
                fieldPath: status.podIP
          - name: SLIPWAY_EGRESS_GATE
            value: {{ printf "$(%s_SERVICE_HOST):$(%s_SERVICE_PORT)" $egress $egress | quote }}
        ports:
          - name: agent
            containerPort: 9090
          - name: http
            containerPort: 8080
        readinessProbe:
          httpGet:
            path: /ready
            port: 9090
          periodSeconds: 1
        resources:
          limits:
            memory: {{ printf "%dMi" $memory }}
            cpu: {{ toString $v.cpu | quote }}
          requests:
            memory: {{ printf "%dMi" (min 128 $memory) }}
            cpu: 50m
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities:
            drop: [ALL]
        volumeMounts:
          - name: app
            mountPath: /app
          - name: tmp
            mountPath: /tmp
    volumes:
      - name: app
        emptyDir:
          sizeLimit: {{ printf "%dMi" $memory }}
      - name: tmp
        emptyDir:
          sizeLimit: {{ printf "%dMi" $memory }}
{{- end }}

{{/*
A template's SandboxWarmPool name, called like slipway.sandboxTemplateSpec: named for the hash of
the template's spec, so a changed spec (a new image) makes a new pool, Helm deletes the old one,
and the warm pods are fresh.
*/}}
{{- define "slipway.poolName" -}}
{{- $hash := include "slipway.sandboxTemplateSpec" . | fromYaml | toJson | sha256sum | trunc 10 }}
{{- printf "%s-%s-%s" (include "slipway.fullname" .root) .template $hash }}
{{- end }}
