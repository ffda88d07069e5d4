{{/*
The YAML Slipway reads (SVC_CONFIG): values.config, with what the chart decides set over it.
Secrets never go in here: the API key and the S3 credentials reach the pod as env from Secrets.
*/}}
{{- define "slipway.config" -}}
{{- $v := .Values }}
{{- $auth := dict "enabled" true "mode" $v.auth.mode }}
{{- if eq $v.auth.mode "oidc" }}
{{- $oidc := dict "issuer" $v.auth.oidc.issuer "adminRole" $v.auth.oidc.adminRole "roleClaim" $v.auth.oidc.roleClaim }}
{{- with $v.auth.oidc.audience }}{{ $_ := set $oidc "audience" . }}{{ end }}
{{- with $v.auth.oidc.dashboardClientId }}{{ $_ := set $oidc "dashboardClientId" . }}{{ end }}
{{- $_ := set $auth "oidc" $oidc }}
{{- end }}
{{- if eq $v.auth.mode "oauth" }}
{{- $oauth := dict "trustedProxies" $v.auth.oauth.trustedProxies }}
{{- with $v.auth.oauth.adminGroup }}{{ $_ := set $oauth "adminGroup" . }}{{ end }}
{{- $_ := set $auth "oauth" $oauth }}
{{- end }}
{{- if $v.auth.tls.existingSecret }}
{{- $_ := set $auth "tls" (dict "enabled" true "certFile" "/etc/slipway/tls/tls.crt" "keyFile" "/etc/slipway/tls/tls.key") }}
{{- end }}
{{- $s3 := dict "region" $v.sources.s3.region "bucket" $v.sources.s3.bucket "prefix" $v.sources.s3.prefix "forcePathStyle" $v.sources.s3.forcePathStyle }}
{{- with $v.sources.s3.endpoint }}{{ $_ := set $s3 "endpoint" . }}{{ end }}
{{- $gateway := dict "name" $v.routes.gateway.name }}
{{- with $v.routes.gateway.namespace }}{{ $_ := set $gateway "namespace" . }}{{ end }}
{{- with $v.routes.gateway.sectionName }}{{ $_ := set $gateway "sectionName" . }}{{ end }}
{{- $routes := dict "kind" $v.routes.kind "gateway" $gateway "controlPlaneService" (dict "name" (include "slipway.fullname" .) "port" (int $v.service.port)) }}
{{- with $v.routes.ingressClassName }}{{ $_ := set $routes "ingressClassName" . }}{{ end }}
{{- $pools := dict }}
{{- range $v.sandboxes.templates }}
{{- $_ := set $pools . (include "slipway.poolName" (dict "root" $ "template" .)) }}
{{- end }}
{{- $owned := dict
  "server" (dict "listen" "0.0.0.0:8080" "dataDir" "/data" "baseURL" (printf "https://%s" $v.host) "appsDomain" $v.appsDomain)
  "auth" $auth
  "kubernetes" (dict "namespace" .Release.Namespace)
  "sources" (dict "backend" "s3" "s3" $s3)
  "store" (dict "backend" $v.store.backend)
  "runtime" (dict
    "backend" "kubernetes"
    "poolSize" (int $v.sandboxes.poolSize)
    "memoryLimitMB" (int $v.sandboxes.memoryLimitMB)
    "cpu" $v.sandboxes.cpu
    "egress" (dict "allowPrivate" $v.sandboxes.allowPrivate)
    "kubernetes" (dict
      "image" $v.sandboxes.image
      "claimTimeout" $v.sandboxes.claimTimeout
      "claimAhead" (int $v.sandboxes.claimAhead)
      "instance" .Release.Name
      "leaderElection" (dict "enabled" (eq $v.store.backend "configmap") "leaseSeconds" (int $v.leaderElection.leaseSeconds) "renewSeconds" (int $v.leaderElection.renewSeconds))
      "versions" $v.sandboxes.versions
      "egress" (dict "listen" "0.0.0.0:3128" "service" (include "slipway.egressService" .))
      "sandboxObjects" (dict "managedBy" "chart" "enrollSecret" (include "slipway.enrollSecret" .) "pools" $pools)
      "networkPolicy" (dict "enabled" false "controlPlaneLabels" (include "slipway.selectorLabels" . | fromYaml))
      "routes" $routes)) }}
{{- toYaml (mergeOverwrite (deepCopy $v.config) $owned) }}
{{- end }}
