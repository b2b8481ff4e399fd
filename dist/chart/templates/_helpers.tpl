{{/* Names and labels of every object of the chart. */}}

{{- define "kubeopera-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's name when it contains the chart's, else <release>-<chart>. */}}
{{- define "kubeopera-operator.fullname" -}}
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

{{- define "kubeopera-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kubeopera-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kubeopera-operator
{{- end }}

{{- define "kubeopera-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubeopera-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "kubeopera-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-controller-manager" (include "kubeopera-operator.fullname" .)) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image: repository@digest when a digest is set, else repository:tag (default v<appVersion>). */}}
{{- define "kubeopera-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The manager's RBAC rules, generated from the +kubebuilder:rbac markers (files/manager-rules.yaml). */}}
{{- define "kubeopera-operator.rules" -}}
{{- .Files.Get "files/manager-rules.yaml" | fromYaml | toJson }}
{{- end }}

{{/* Whether the chart installs the CRDs: crds.enabled, or the deprecated crds.install when a user
set it (it wins, so that values written for the earlier chart keep their meaning). */}}
{{- define "kubeopera-operator.crdsEnabled" -}}
{{- if hasKey .Values.crds "install" }}
{{- if .Values.crds.install }}true{{ end }}
{{- else if .Values.crds.enabled }}true
{{- end }}
{{- end }}
