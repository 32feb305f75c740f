{{/* The chart's name. */}}
{{- define "hookbus.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the prefix of every resource the chart makes (at most 45 characters, so that suffixes fit in 63). */}}
{{- define "hookbus.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 45 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hookbus.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels of one component: (dict "ctx" $ "component" "worker"). */}}
{{- define "hookbus.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookbus.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels of one component's resources. */}}
{{- define "hookbus.labels" -}}
{{ include "hookbus.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: hookbus
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ include "hookbus.chart" .ctx }}
{{- end }}

{{- define "hookbus.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The NATS users' passwords: the chart's Secret, or natsAuth.existingSecret. Its name is the release's, not the full name: the NATS chart's values name it too. */}}
{{- define "hookbus.natsSecret" -}}
{{- .Values.natsAuth.existingSecret | default (printf "%s-hookbus-nats" .Release.Name) }}
{{- end }}

{{/* The Secret of the NATS accounts (users, passwords, permissions), mounted into the NATS pods. */}}
{{- define "hookbus.natsAccounts" -}}
{{- printf "%s-hookbus-nats-accounts" .Release.Name }}
{{- end }}

{{/* The NATS chart's client Service, as that chart names it. */}}
{{- define "hookbus.natsService" -}}
{{- if .Values.nats.service.name }}
{{- .Values.nats.service.name }}
{{- else if .Values.nats.fullnameOverride }}
{{- .Values.nats.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "nats" .Values.nats.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The NATS URL(s) every component connects to. */}}
{{- define "hookbus.natsURL" -}}
{{- if .Values.bus.url }}
{{- .Values.bus.url }}
{{- else if .Values.nats.enabled }}
{{- printf "nats://%s:%d" (include "hookbus.natsService" .) (int .Values.nats.config.nats.port) }}
{{- else }}
{{- fail "bus.url is required when nats.enabled is false: the NATS server(s) hookbus connects to (nats://HOST:4222,nats://HOST2:4222)" }}
{{- end }}
{{- end }}

{{/* The environment of a component connecting as NATS user .user: NATS_URL, NATS_USER, NATS_PASSWORD (from the users' Secret), POD_IP. */}}
{{- define "hookbus.natsEnv" -}}
- name: NATS_URL
  value: {{ include "hookbus.natsURL" .ctx | quote }}
- name: NATS_USER
  value: {{ .user | quote }}
- name: NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "hookbus.natsSecret" .ctx }}
      key: {{ .user }}-password
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end }}

{{/* The flags every command shares: the bus, its prefix and replicas, JSON logs. */}}
{{- define "hookbus.busArgs" -}}
- --nats=$(NATS_URL)
- --prefix={{ .Values.bus.prefix }}
- --replicas={{ .Values.bus.replicas }}
- --log-format={{ .Values.logFormat }}
{{- end }}

{{/* A secret value: the one given, else the one the existing Secret holds (an upgrade keeps it), else a new random one. (dict "ctx" $ "secret" NAME "key" KEY "value" GIVEN) */}}
{{- define "hookbus.secretValue" -}}
{{- if .value }}
{{- .value }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .ctx.Release.Namespace .secret }}
{{- if and $existing $existing.data (hasKey $existing.data .key) }}
{{- index $existing.data .key | b64dec }}
{{- else }}
{{- printf "p%s" (randAlphaNum 31) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The NATS users the chart's components and the configured approvers and plugins connect as, with their Secret keys. */}}
{{- define "hookbus.natsUsers" -}}
{{- $users := list "admin" "loop" "auditor" "webui" "checkpointer" "sys" }}
{{- range .Values.natsAuth.approvers }}{{ $users = append $users . }}{{ end }}
{{- range .Values.natsAuth.plugins }}{{ $users = append $users .name }}{{ end }}
{{- range .Values.natsAuth.witnesses }}{{ $users = append $users .user }}{{ end }}
{{- join "," $users }}
{{- end }}

{{/* The pod-level settings every component shares. */}}
{{- define "hookbus.podSpec" -}}
securityContext:
  {{- toYaml .ctx.Values.podSecurityContext | nindent 2 }}
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* HTTP probes: liveness on /healthz, readiness on /readyz, on port .port. */}}
{{- define "hookbus.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
startupProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  periodSeconds: 2
  failureThreshold: 60
{{- end }}

{{/* A duration of whole seconds or minutes (90s, 2m, 1m30s) in seconds, or a failure naming the value. */}}
{{- define "hookbus.seconds" -}}
{{- $d := .value | toString }}
{{- if not (regexMatch "^([0-9]+m)?([0-9]+s)?$" $d) }}
{{- fail (printf "%s %q: give whole minutes and seconds, e.g. 90s, 2m or 1m30s" .name $d) }}
{{- end }}
{{- $m := regexFind "^[0-9]+m" $d | trimSuffix "m" | default "0" | int }}
{{- $s := regexFind "[0-9]+s$" $d | trimSuffix "s" | default "0" | int }}
{{- add (mul $m 60) $s }}
{{- end }}
