{{- define "switchyard.name" -}}{{ .Release.Name }}-switchyard{{- end -}}
{{- define "switchyard.labels" -}}
app.kubernetes.io/name: switchyard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "switchyard.visibilityMode" -}}
{{- $mode := .Values.global.skills.visibilityMode | toString -}}
{{- if not (has $mode (list "off" "report" "enforce")) -}}
{{- fail (printf "global.skills.visibilityMode must be off, report or enforce (got %q)" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}
