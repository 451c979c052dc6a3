{{/* Chart name, overridable with nameOverride. */}}
{{- define "workerless.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full resource name: fullnameOverride, or "<release>-<chart>" (just the release when it contains the chart name). */}}
{{- define "workerless.fullname" -}}
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

{{- define "workerless.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every resource. */}}
{{- define "workerless.labels" -}}
helm.sh/chart: {{ include "workerless.chart" . }}
{{ include "workerless.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the pods (immutable on a Deployment: never add to them). */}}
{{- define "workerless.selectorLabels" -}}
app.kubernetes.io/name: {{ include "workerless.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "workerless.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "workerless.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
A whole number of seconds from a config value (number or numeric string), rounded up; the default when empty.
Fails with the option's name for anything else (workerless itself would exit 2 on it).
Call with (dict "value" V "default" D "name" "config.X").
*/}}
{{- define "workerless.seconds" -}}
{{- $v := .value }}
{{- if or (kindIs "invalid" $v) (eq (toString $v) "") }}
{{- .default }}
{{- else if regexMatch "^[0-9]+(\\.[0-9]+)?$" (toString $v) }}
{{- ceil (float64 (toString $v)) | int }}
{{- else }}
{{- fail (printf "%s must be a number of seconds, got %q" .name (toString $v)) }}
{{- end }}
{{- end }}

{{/*
terminationGracePeriodSeconds: how long Kubernetes waits after SIGTERM before it sends SIGKILL.
On SIGTERM workerless stops starting receives but lets its open long polls finish, because SQS can still hand a
message to a poll whose caller gave up (that message would stay invisible for a whole visibility timeout); that
takes up to --poll-for seconds. It then finishes and settles every message it holds, within --shutdown-timeout
seconds. A SIGKILL before that leaves messages invisible until their visibility timeout expires, so the pod gets
  --shutdown-timeout + --poll-for + terminationGraceMarginSeconds
(defaults 30 + 20 + 15 = 65 s). terminationGracePeriodSeconds in values may raise it, never lower it.
*/}}
{{- define "workerless.terminationGracePeriodSeconds" -}}
{{- $shutdown := include "workerless.seconds" (dict "value" (index .Values.config "WORKERLESS_SHUTDOWN_TIMEOUT") "default" 30 "name" "config.WORKERLESS_SHUTDOWN_TIMEOUT") | int }}
{{- $pollFor := include "workerless.seconds" (dict "value" (index .Values.config "WORKERLESS_POLL_FOR") "default" 20 "name" "config.WORKERLESS_POLL_FOR") | int }}
{{- $margin := include "workerless.seconds" (dict "value" .Values.terminationGraceMarginSeconds "default" 15 "name" "terminationGraceMarginSeconds") | int }}
{{- $minimum := add $shutdown $pollFor $margin }}
{{- $explicit := include "workerless.seconds" (dict "value" .Values.terminationGracePeriodSeconds "default" 0 "name" "terminationGracePeriodSeconds") | int }}
{{- max $minimum $explicit }}
{{- end }}

{{/* The region for KEDA's SQS trigger: keda.awsRegion, else config.WORKERLESS_REGION. */}}
{{- define "workerless.kedaRegion" -}}
{{- $region := .Values.keda.awsRegion | default (index .Values.config "WORKERLESS_REGION") | default "" | toString }}
{{- required "keda.enabled needs keda.awsRegion (or config.WORKERLESS_REGION): KEDA's aws-sqs-queue trigger requires awsRegion" $region }}
{{- end }}

{{/* The queues KEDA scales on, one per line: keda.queueURLs, else config.WORKERLESS_QUEUES without its weights. */}}
{{- define "workerless.kedaQueues" -}}
{{- if .Values.keda.queueURLs }}
{{- range .Values.keda.queueURLs }}
{{ . }}
{{- end }}
{{- else }}
{{- $queues := index .Values.config "WORKERLESS_QUEUES" | default "" | toString }}
{{- range .Values.routes }}
{{- $routeQueues := .queues | default "" }}
{{- if kindIs "slice" $routeQueues }}{{ $routeQueues = join "," $routeQueues }}{{ end }}
{{- $queues = printf "%s,%s" $queues $routeQueues }}
{{- end }}
{{- if eq (trim (trimAll "," $queues)) "" }}
{{- fail "keda.enabled needs keda.queueURLs, config.WORKERLESS_QUEUES or routes" }}
{{- end }}
{{- range splitList "," $queues }}
{{- $q := regexReplaceAll ":[0-9]+$" (trim .) "" }}
{{- if $q }}
{{ $q }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
