{{/*
Labels every object carries. Selectors use only name + component (immutable on upgrades and the
same as the manifests before the chart).
*/}}
{{- define "vm.labels" -}}
app.kubernetes.io/name: volume-medic
app.kubernetes.io/part-of: volume-medic
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "vm.componentLabels" -}}
{{ include "vm.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "vm.selector" -}}
app.kubernetes.io/name: volume-medic
app.kubernetes.io/component: {{ . }}
{{- end }}

{{/*
An image reference: {repository, tag, digest} and the root. repository@digest when a digest is set
(it wins over the tag), else repository:tag. global.imageRegistry (a mirror) replaces the
repository's registry: its first path part when that names a host (has a dot or a port, or is
localhost), else it goes in front (docker.io's short names).
*/}}
{{- define "vm.imageRef" -}}
{{- $repo := .image.repository -}}
{{- with .root.Values.global.imageRegistry -}}
{{- $parts := splitList "/" $repo -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $repo = join "/" (rest $parts) -}}
{{- end -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) $repo -}}
{{- end -}}
{{- if .image.digest -}}
{{ $repo }}@{{ .image.digest }}
{{- else -}}
{{ $repo }}:{{ .tag }}
{{- end -}}
{{- end }}

{{/* The volume-medic image (tag defaults to appVersion). */}}
{{- define "vm.image" -}}
{{- include "vm.imageRef" (dict "root" . "image" .Values.image "tag" (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end }}

{{- define "vm.redisImage" -}}
{{- include "vm.imageRef" (dict "root" . "image" .Values.redis.bundled.image "tag" .Values.redis.bundled.image.tag) -}}
{{- end }}

{{/* imagePullSecrets of every pod: global.imagePullSecrets, then imagePullSecrets, once each. */}}
{{- define "vm.imagePullSecrets" -}}
{{- $names := concat (.Values.global.imagePullSecrets | default list) .Values.imagePullSecrets | uniq -}}
{{- with $names -}}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end -}}
{{- end }}

{{/*
The affinity of a pod of volume-medic's control plane (receiver, cluster worker, bundled Redis,
secrets Job): its values' affinity and, with placement.avoidAgentNodes, a required node affinity
away from agent-enabled nodes. They hold every issuer root, the control-signing key and Redis
passwords that reach every node's queue: root on a node running one of them would hold the whole
fleet, where root on a node running only an agent holds that node.
An agent-enabled node is one that matches every entry of nodeAgent.nodeSelector, the DaemonSet's
choice (kubernetes.io/os aside: these pods need Linux too, so it tells no agent node from
another). A node fails to match when one entry's label is missing or different (NotIn matches
a node without the label), so the avoidance is one term per entry, ORed. Node selector terms are
ORed too, so it is ANDed with each term the values give: every pair of theirs and ours.
The pod's nodeSelector and tolerations Kubernetes ANDs by itself; one that only agent-enabled
nodes match (it names every entry) is refused here rather than left Pending.
{root, affinity, nodeSelector, what}
*/}}
{{- define "vm.affinity" -}}
{{- $affinity := deepCopy (.affinity | default dict) -}}
{{- if .root.Values.placement.avoidAgentNodes -}}
{{- $avoid := list -}}
{{- $pinned := 0 -}}
{{- range $k, $v := .root.Values.nodeAgent.nodeSelector -}}
{{- if and (ne $k "kubernetes.io/os") (not (kindIs "invalid" $v)) -}}
{{- $avoid = append $avoid (dict "key" $k "operator" "NotIn" "values" (list (toString $v))) -}}
{{- if eq (toString (get ($.nodeSelector | default dict) $k)) (toString $v) }}{{ $pinned = add1 $pinned }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if not $avoid -}}
{{- fail "placement.avoidAgentNodes: nodeAgent.nodeSelector names no label but kubernetes.io/os, so the node agent runs on every node and nothing is left for the receiver, cluster worker, Redis and secrets Job: give the agent's nodes a label of their own (nodeAgent.nodeSelector), or set placement.avoidAgentNodes=false (every node then holds the fleet's keys)" -}}
{{- end -}}
{{- if eq $pinned (len $avoid) -}}
{{- fail (printf "placement.avoidAgentNodes: %s.nodeSelector selects only nodes the node agent runs on (it names every label of nodeAgent.nodeSelector): choose other nodes, or set placement.avoidAgentNodes=false" .what) -}}
{{- end -}}
{{- $node := get $affinity "nodeAffinity" | default dict -}}
{{- $required := get $node "requiredDuringSchedulingIgnoredDuringExecution" | default dict -}}
{{- $terms := list -}}
{{- range $t := get $required "nodeSelectorTerms" | default (list dict) -}}
{{- range $e := $avoid -}}
{{- $terms = append $terms (merge (dict "matchExpressions" (append (get $t "matchExpressions" | default list) $e)) (deepCopy $t)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $required "nodeSelectorTerms" $terms -}}
{{- $_ = set $node "requiredDuringSchedulingIgnoredDuringExecution" $required -}}
{{- $_ = set $affinity "nodeAffinity" $node -}}
{{- end -}}
{{- with $affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end }}

{{/* Scheduling of a control-plane pod: nodeSelector, tolerations, affinity (vm.affinity). {root, values, what} */}}
{{- define "vm.controlPlaneScheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- include "vm.affinity" (dict "root" .root "affinity" .values.affinity "nodeSelector" .values.nodeSelector "what" .what) }}
{{- end }}

{{/* component -> values key (receiver, clusterWorker, nodeAgent). */}}
{{- define "vm.key" -}}
{{- if eq . "cluster-worker" }}clusterWorker{{ else if eq . "node-agent" }}nodeAgent{{ else }}receiver{{ end -}}
{{- end }}

{{- define "vm.webhookTokenSecret" -}}
{{- .Values.webhookToken.existingSecret | default "volume-medic-webhook-token" -}}
{{- end }}

{{/* The signing Secret of a role: {root, role}. */}}
{{- define "vm.signingSecret" -}}
{{- $k := include "vm.key" .role -}}
{{- (get .root.Values.signingKeys.existingSecrets $k) | default (printf "volume-medic-signing-%s" .role) -}}
{{- end }}

{{/* The Redis credentials Secret of a process: {root, component}. */}}
{{- define "vm.redisSecret" -}}
{{- $k := include "vm.key" .component -}}
{{- (get .root.Values.redis.credentials.existingSecrets $k) | default (printf "volume-medic-redis-%s" .component) -}}
{{- end }}

{{/* The topology the processes use: the bundled Redis is a single one. */}}
{{- define "vm.redisTopology" -}}
{{- if .Values.redis.bundled.enabled }}url{{ else }}{{ .Values.redis.external.topology }}{{ end -}}
{{- end }}

{{/* maxmemory of the bundled Redis in MiB: baseMiB + nodes x perNodeKiB, rounded up. */}}
{{- define "vm.redisMaxmemoryMiB" -}}
{{- $m := .Values.redis.bundled.memory -}}
{{- add (int $m.baseMiB) (div (add (mul (int $m.nodes) (int $m.perNodeKiB)) 1023) 1024) -}}
{{- end }}

{{/* Does the chart make the Redis credentials (bundled Redis without existing Secrets)? */}}
{{- define "vm.redisGenerated" -}}
{{- if and .Values.redis.bundled.enabled (not .Values.redis.bundled.aclExistingSecret) }}true{{ end -}}
{{- end }}

{{/*
The environment of a volume-medic container: the ConfigMap, its signing keys and its Redis
credentials. {root, component}.
*/}}
{{/* Do node agents use their own Redis user from enrolment (redis.nodeUsers)? */}}
{{- define "vm.nodeUsers" -}}
{{- if .Values.redis.nodeUsers -}}
{{- if and (not .Values.redis.bundled.enabled) (eq .Values.redis.external.topology "url") (not .Values.redis.external.address) -}}
{{- fail "redis.nodeUsers with an external Redis of topology url needs redis.external.address (host:port): node agents connect there as their own user, without the shared credentials" -}}
{{- end -}}
true
{{- end -}}
{{- end }}

{{- define "vm.env" -}}
{{- $root := .root -}}
{{- $secret := include "vm.redisSecret" . -}}
{{- $ownUser := and (eq .component "node-agent") (include "vm.nodeUsers" $root) -}}
{{- /* A node agent holds no issuer root: its node's work keys come from enrolment (vm.enrolEnv). */}}
{{- if ne .component "node-agent" }}
- name: SIGNING_KEYS_DIR
  value: /etc/volume-medic/signing
{{- end }}
{{- if $ownUser }}
{{- if eq (include "vm.redisTopology" $root) "url" }}
# No shared Redis password on a node: the agent's own user and password come from enrolment.
- name: REDIS_URL
  value: {{ printf "redis://%s" (ternary (printf "volume-medic-redis.%s.svc:6379" $root.Release.Namespace) $root.Values.redis.external.address $root.Values.redis.bundled.enabled) | quote }}
{{- end }}
{{- else if eq (include "vm.redisTopology" $root) "url" }}
# Its own Redis user and password (deploy/README.md, "Redis"): a file from its own Secret
# (vm.redisCredentialsVolumes), in no environment variable.
- name: REDIS_URL_FILE
  value: /etc/volume-medic/redis-credentials/url
{{- else }}
- name: REDIS_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: username
- name: REDIS_PASSWORD_FILE
  value: /etc/volume-medic/redis-credentials/password
{{- end }}
{{- if include "vm.sentinelPassword" $root }}
- name: REDIS_SENTINEL_PASSWORD_FILE
  value: /etc/volume-medic/redis-sentinel/password
{{- end }}
{{- end }}

{{/* Does a process read the sentinels' own password (redis.external.sentinelPasswordSecret)? */}}
{{- define "vm.sentinelPassword" -}}
{{- if and .Values.redis.external.sentinelPasswordSecret.name (eq (include "vm.redisTopology" .) "sentinel") }}true{{ end -}}
{{- end }}

{{/*
Mounts and volumes of a process's Redis secrets (vm.env names the files): its own Secret's url,
or password with sentinel and cluster, and the sentinels' password. None for a node agent with
its own user (redis.nodeUsers): its credentials come from enrolment. {root, component}
*/}}
{{- define "vm.redisCredentialsMounts" -}}
{{- if not (and (eq .component "node-agent") (include "vm.nodeUsers" .root)) }}
- name: redis-credentials
  mountPath: /etc/volume-medic/redis-credentials
  readOnly: true
{{- end }}
{{- if include "vm.sentinelPassword" .root }}
- name: redis-sentinel
  mountPath: /etc/volume-medic/redis-sentinel
  readOnly: true
{{- end }}
{{- end }}
{{- define "vm.redisCredentialsVolumes" -}}
{{- $key := ternary "url" "password" (eq (include "vm.redisTopology" .root) "url") -}}
{{- if not (and (eq .component "node-agent") (include "vm.nodeUsers" .root)) }}
# Only the key the process reads, not the rest of its Secret.
- name: redis-credentials
  secret:
    secretName: {{ include "vm.redisSecret" . }}
    items:
      - key: {{ $key }}
        path: {{ $key }}
    defaultMode: 288 # 0440, read through the pod's fsGroup
{{- end }}
{{- if include "vm.sentinelPassword" .root }}
- name: redis-sentinel
  secret:
    secretName: {{ .root.Values.redis.external.sentinelPasswordSecret.name }}
    items:
      - key: {{ .root.Values.redis.external.sentinelPasswordSecret.key }}
        path: password
    defaultMode: 288 # 0440
{{- end }}
{{- end }}

{{/* Mount and volume of the Redis CA, when one is named. */}}
{{- define "vm.caMount" -}}
{{- if or (and (not .Values.redis.bundled.enabled) .Values.redis.external.caSecret.name) (and .Values.redis.bundled.enabled .Values.redis.bundled.tls.enabled) -}}
- name: redis-ca
  mountPath: /etc/volume-medic/redis-ca
  readOnly: true
{{- end }}
{{- end }}
{{- define "vm.caVolume" -}}
{{- if and .Values.redis.bundled.enabled .Values.redis.bundled.tls.enabled -}}
- name: redis-ca
  secret:
    # Only the CA of the bundled Redis's certificate (templates/redis.yaml), not its key.
    secretName: {{ .Values.redis.bundled.tls.existingSecret | default "volume-medic-redis-tls" }}
    items:
      - key: ca.crt
        path: ca.pem
    defaultMode: 292 # 0444: a certificate, not a secret
{{- else if and (not .Values.redis.bundled.enabled) .Values.redis.external.caSecret.name -}}
- name: redis-ca
  secret:
    secretName: {{ .Values.redis.external.caSecret.name }}
    items:
      - key: {{ .Values.redis.external.caSecret.key }}
        path: ca.pem
    defaultMode: 292 # 0444: a certificate, not a secret
{{- end }}
{{- end }}

{{/*
Pod annotations that roll the pods when what they read at start changes: the ConfigMap, the names
of the Secrets they read, and everything the secrets hook Job makes its Secrets from
(vm.secretsSpec: e.g. receiver.tls.extraDnsNames makes a new certificate, config.queuePrefix a
new ACL file). The chart renders no Secret content to hash: the Job's Secrets keep their values
across upgrades unless those inputs change, and a Secret you manage yourself needs a rollout
restart when you change it.
*/}}
{{- define "vm.checksums" -}}
checksum/config: {{ include (print .Template.BasePath "/config.yaml") . | sha256sum }}
checksum/secrets: {{ list .Values.webhookToken .Values.signingKeys .Values.controlSigning .Values.redis.credentials .Values.redis.bundled.tls .Values.redis.bundled.aclExistingSecret .Values.redis.external.caSecret .Values.redis.external.sentinelPasswordSecret .Values.receiver.tls (include "vm.secretsSpec" .) | toJson | sha256sum }}
{{- end }}

{{/* The control key's Secret (receiver only) and its certificate's ConfigMap (every process). */}}
{{- define "vm.controlKeySecret" -}}
{{- .Values.controlSigning.existingSecret | default "volume-medic-control-signing" -}}
{{- end }}
{{- define "vm.controlCertsConfigMap" -}}
{{- .Values.controlSigning.existingConfigMap | default "volume-medic-control-certs" -}}
{{- end }}
{{- define "vm.controlCertsMount" -}}
- name: control-certs
  mountPath: /etc/volume-medic/controls
  readOnly: true
{{- end }}
{{- define "vm.controlCertsVolume" -}}
# The certificate(s) that check operator controls: public, no secret in them.
- name: control-certs
  configMap:
    name: {{ include "vm.controlCertsConfigMap" . }}
    defaultMode: 292 # 0444
{{- end }}

{{/*
Enrolment (docs/signed-work.md): the node agents and the cluster worker trade their pod's
projected service-account token (audience volume-medic, bound to the pod, renewed by the kubelet)
for their own queue's work keys at the receiver's POST /v1/enrol, over HTTPS checked against the
receiver's CA.
*/}}
{{- define "vm.enrolEnv" -}}
- name: ENROL_URL
  value: {{ printf "%s://volume-medic.%s.svc:8080" (ternary "http" "https" (eq .Values.receiver.tls.mode "off")) .Release.Namespace | quote }}
{{- if ne .Values.receiver.tls.mode "off" }}
- name: ENROL_CA_FILE
  value: /etc/volume-medic/receiver-ca/ca.crt
{{- end }}
{{- end }}
{{- define "vm.enrolMounts" -}}
- name: enrol-token
  mountPath: /var/run/secrets/volume-medic/enrol
  readOnly: true
{{- if ne .Values.receiver.tls.mode "off" }}
- name: receiver-ca
  mountPath: /etc/volume-medic/receiver-ca
  readOnly: true
{{- end }}
{{- end }}
{{- define "vm.enrolVolumes" -}}
- name: enrol-token
  projected:
    sources:
      - serviceAccountToken:
          audience: volume-medic
          expirationSeconds: 3600
          path: token
{{- if eq .Values.receiver.tls.mode "generated" }}
- name: receiver-ca
  configMap:
    name: volume-medic-receiver-ca
    items:
      - key: ca.crt
        path: ca.crt
{{- else if eq .Values.receiver.tls.mode "existingSecret" }}
# Only the CA of the receiver's Secret, not its key.
- name: receiver-ca
  secret:
    secretName: {{ .Values.receiver.tls.existingSecret }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end }}

{{/*
What the secrets hook Job makes (src/control/secrets/spec.ts), as JSON: every Secret the chart needs that
the operator did not name. Nothing random or secret is in it, and no chart version (labels are
the stable ones), so it is the same on every render; the pods' checksum/secrets covers it.
*/}}
{{- define "vm.secretsSpec" -}}
{{- $ns := .Release.Namespace -}}
{{- $labels := dict "app.kubernetes.io/name" "volume-medic" "app.kubernetes.io/part-of" "volume-medic" "app.kubernetes.io/instance" .Release.Name -}}
{{- $l := dict -}}
{{- range $c := list "receiver" "cluster-worker" "node-agent" "redis" -}}
{{- $_ := set $l $c (merge (dict "app.kubernetes.io/component" $c) $labels) -}}
{{- end -}}
{{- $items := list -}}
{{- if not .Values.webhookToken.existingSecret -}}
{{- $items = append $items (dict "make" "token" "secret" (include "vm.webhookTokenSecret" .) "key" "token" "length" 48 "labels" $l.receiver) -}}
{{- end -}}
{{- range $role := list "receiver" "cluster-worker" "node-agent" -}}
{{- if not (get $.Values.signingKeys.existingSecrets (include "vm.key" $role)) -}}
{{- $items = append $items (dict "make" "signing-key" "secret" (include "vm.signingSecret" (dict "root" $ "role" $role)) "file" (printf "%s.%s" $role $.Values.signingKeys.keyId) "labels" (get $l $role)) -}}
{{- end -}}
{{- end -}}
{{- if eq .Values.receiver.tls.mode "generated" -}}
{{- /* localhost and 127.0.0.1: `kubectl port-forward svc/volume-medic 8080` then https://localhost:8080 (NOTES). */ -}}
{{- $names := concat (list "volume-medic" (printf "volume-medic.%s" $ns) (printf "volume-medic.%s.svc" $ns) (printf "volume-medic.%s.svc.cluster.local" $ns) "localhost") .Values.receiver.tls.extraDnsNames -}}
{{- $items = append $items (dict "make" "tls" "secret" "volume-medic-receiver-tls" "caConfigMap" "volume-medic-receiver-ca" "caName" "volume-medic-receiver-ca" "commonName" "volume-medic" "dnsNames" $names "ipAddresses" (list "127.0.0.1") "days" 3650 "labels" $l.receiver) -}}
{{- end -}}
{{- if not .Values.controlSigning.existingSecret -}}
{{- $items = append $items (dict "make" "control-signing" "secret" "volume-medic-control-signing" "configMap" "volume-medic-control-certs" "commonName" "volume-medic-controls" "days" 36500 "labels" $l.receiver) -}}
{{- end -}}
{{- if include "vm.redisGenerated" . -}}
{{- /* The ACL template without its comments (the renderer drops them too): a shorter spec. */ -}}
{{- $acl := list -}}
{{- range $line := splitList "\n" (.Files.Get "files/users.acl.template") -}}
{{- if and (ne (trim $line) "") (not (hasPrefix "#" $line)) -}}{{- $acl = append $acl $line -}}{{- end -}}
{{- end -}}
{{- $acl = printf "%s\n" (join "\n" $acl) -}}
{{- $users := list -}}
{{- range $c := list "receiver" "cluster-worker" "node-agent" -}}
{{- $users = append $users (dict "component" $c "secret" (include "vm.redisSecret" (dict "root" $ "component" $c)) "username" (printf "volume-medic-%s" $c) "labels" (get $l $c)) -}}
{{- end -}}
{{- $items = append $items (dict "make" "redis-users" "aclSecret" "volume-medic-redis-acl" "address" (printf "volume-medic-redis.%s.svc:6379" $ns) "prefix" .Values.config.queuePrefix "template" $acl "users" $users "labels" $l.redis) -}}
{{- end -}}
{{- if and .Values.redis.bundled.enabled .Values.redis.bundled.tls.enabled (not .Values.redis.bundled.tls.existingSecret) -}}
{{- $names := list "volume-medic-redis" (printf "volume-medic-redis.%s" $ns) (printf "volume-medic-redis.%s.svc" $ns) (printf "volume-medic-redis.%s.svc.cluster.local" $ns) "localhost" -}}
{{- $items = append $items (dict "make" "tls" "secret" "volume-medic-redis-tls" "caName" "volume-medic-redis-ca" "commonName" "volume-medic-redis" "dnsNames" $names "ipAddresses" (list "127.0.0.1") "days" 3650 "labels" $l.redis) -}}
{{- end -}}
{{- dict "version" 1 "namespace" $ns "items" $items | toJson -}}
{{- end }}
