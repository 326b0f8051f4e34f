{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "warden.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name: <release>-warden, or the release name when it already contains the chart name. */}}
{{- define "warden.fullname" -}}
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

{{- define "warden.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "warden.labels" -}}
helm.sh/chart: {{ include "warden.chart" . }}
{{ include "warden.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: warden
{{- end }}

{{/* Selector labels (immutable on Deployments: never add to these). */}}
{{- define "warden.selectorLabels" -}}
app.kubernetes.io/name: {{ include "warden.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "warden.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "warden.configName" -}}
{{- printf "%s-config" (include "warden.fullname" .) }}
{{- end }}

{{- define "warden.policiesName" -}}
{{- printf "%s-policies" (include "warden.fullname" .) }}
{{- end }}

{{- define "warden.sendersName" -}}
{{- printf "%s-senders" (include "warden.fullname" .) }}
{{- end }}

{{/* The senders file's text (SENDERS_PATH): senders.file as written, or its list of senders
under `version: 1`. Included only when senders.enabled. */}}
{{- define "warden.sendersFile" -}}
{{- $f := .Values.senders.file -}}
{{- if kindIs "slice" $f -}}
version: 1
senders:
{{- toYaml $f | nindent 2 }}
{{- else -}}
{{- required "senders.enabled needs senders.file: the senders file's YAML text, or its list of senders" $f -}}
{{- end -}}
{{- end }}

{{/* SENDERS_PATH and every env var the senders file names, each from its Secret key
(senders.secrets). Included only when senders.enabled. */}}
{{- define "warden.sendersEnv" -}}
- name: SENDERS_PATH
  value: /etc/warden/senders/senders.yaml
{{- range $name, $ref := .Values.senders.secrets }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef: {name: {{ $ref.existingSecret | quote }}, key: {{ $ref.key | quote }}}
{{- end }}
{{- end }}

{{/* The port variable of a component: the webhook listens on SERVER_HTTP_PORT, the console on CONSOLE_HTTP_ADDR, the others on ADMIN_HTTP_PORT. */}}
{{- define "warden.portVariable" -}}
{{- if eq . "webhook" }}SERVER_HTTP_PORT{{ else if eq . "console" }}CONSOLE_HTTP_ADDR{{ else }}ADMIN_HTTP_PORT{{ end }}
{{- end }}

{{/* The port variable's value: the console's is an address (0.0.0.0:port), the others' a
port. Call with (dict "name" $name "port" $c.port). */}}
{{- define "warden.portValue" -}}
{{- if eq .name "console" }}0.0.0.0:{{ .port }}{{ else }}{{ .port }}{{ end }}
{{- end }}

{{/* Secret-backed env vars; call with (dict "root" $ "component" "webhook"). */}}
{{- define "warden.secretEnv" -}}
{{- $secret := .root.Values.existingSecret -}}
- name: PLATFORM_ACCESS_TOKEN
  valueFrom:
    secretKeyRef: {name: {{ $secret | quote }}, key: PLATFORM_ACCESS_TOKEN}
- name: DB_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ $secret | quote }}, key: DB_PASSWORD}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ $secret | quote }}, key: REDIS_PASSWORD, optional: true}
{{- if eq .component "webhook" }}
- name: PLATFORM_APP_SECRET
  valueFrom:
    secretKeyRef: {name: {{ $secret | quote }}, key: PLATFORM_APP_SECRET}
- name: PLATFORM_WEBHOOK_VERIFY_TOKEN
  valueFrom:
    secretKeyRef: {name: {{ $secret | quote }}, key: PLATFORM_WEBHOOK_VERIFY_TOKEN}
{{- end }}
{{- end }}

{{/* Pod security, the policy-file volume (and the senders file's, when senders.enabled) and
scheduling constraints shared by every pod. */}}
{{- define "warden.podCommon" -}}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
volumes:
  - name: policies
    configMap:
      name: {{ include "warden.policiesName" . }}
  - name: tmp
    emptyDir: {}
  {{- if .Values.senders.enabled }}
  - name: senders
    configMap:
      name: {{ include "warden.sendersName" . }}
  {{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Env shared by every container: settings ConfigMap plus extraEnv. */}}
{{- define "warden.extraEnv" -}}
{{- range $k, $v := .Values.extraEnv }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}
