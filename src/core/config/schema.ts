import { z } from '../zod.ts';
import { Mode } from '../catalogue/result.ts';
import { RunbookName } from '../catalogue/jobs.ts';
import { isCidr } from '../catalogue/cidr.ts';
import { NodeName } from '../catalogue/names.ts';

/** deploy/integrations/npd/local-pv-monitor.json's `source`, which NPD writes as source.component. */
export const DEFAULT_NPD_EVENT_SOURCES: readonly string[] = ['local-pv-monitor'];

// Every setting, its default and its meaning, in one place. The README's configuration table
// mirrors this file. Environment variables (UPPER_SNAKE) override the optional config file
// (VOLUME_MEDIC_CONFIG, YAML or JSON, same names in camelCase).

const Port = z.coerce.number().check(z.int(), z.gte(0), z.lte(65535));
const Millis = z.coerce.number().check(z.int(), z.positive());

function isRedisUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '' && !/\s/.test(v);
  } catch {
    return false;
  }
}

/** `host:port` (IPv6 in brackets); a port is required: a default would hide a typo. */
export const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?):([0-9]{1,5})$/;
const HostPort = z.string().check(
  z.refine((v) => {
    const m = HOST_PORT.exec(v);
    return m !== null && Number(m[3]) >= 1 && Number(m[3]) <= 65535;
  }, 'expected host:port with a port from 1 to 65535 (e.g. redis-0.redis:26379)'),
);

// Built on each call and not held: a process validates its configuration once, at start, and the
// node agent should not keep the schema of every process's settings for its lifetime (its idle RSS
// is budgeted against a bare BullMQ Worker: bench/README.md, "The agent against its floor").
// long because: every setting with its default and its meaning, one per entry, in one place
export function configSchema() {
  return z
    .object({
      /** PORT: HTTP port of the receiver. */
      port: z._default(Port, 8080),
      /** LISTEN_ADDRESS: address the receiver binds to. */
      listenAddress: z._default(z.string(), '0.0.0.0'),
      /**
       * PROBE_PORT: node agent and cluster worker: port of their probe server (/healthz, /readyz,
       * /metrics; src/adapters/observability/probe-server.ts). 0: any free port (tests). Default 9464.
       */
      probePort: z._default(Port, 9464),
      /** PROBE_LISTEN_ADDRESS: address the probe server binds to (the kubelet probes the pod IP). Default 0.0.0.0. */
      probeListenAddress: z._default(z.string().check(z.minLength(1)), '0.0.0.0'),
      // --- Redis: exactly one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (none: REDIS_URL's
      // default, for development). See src/adapters/redis/redis-target.ts for how they become a connection.
      /**
       * REDIS_URL: a single Redis, `redis://` or `rediss://` (TLS). Default `redis://127.0.0.1:6379` when no
       * topology is set. With a password in it, better REDIS_URL_FILE: a file holding the URL (a mounted
       * Secret; what the chart sets), so the password is in no process environment. Not both.
       */
      redisUrl: z.optional(z.string().check(z.refine(isRedisUrl, 'a redis:// or rediss:// URL'))),
      /** REDIS_SENTINELS: Sentinel-managed primary/replica: the sentinels, `host:port,host:port`; needs REDIS_SENTINEL_NAME. */
      redisSentinels: z.optional(z.array(HostPort).check(z.minLength(1))),
      /** REDIS_SENTINEL_NAME: the primary's name the sentinels monitor (`sentinel monitor <name> ...`). */
      redisSentinelName: z.optional(z.string().check(z.regex(/^[A-Za-z0-9._-]{1,128}$/, 'letters, digits, . _ - only'))),
      /**
       * REDIS_SENTINEL_PASSWORD: the sentinels' own password (`requirepass` of the sentinels), if any. Never
       * logged. Or REDIS_SENTINEL_PASSWORD_FILE: a file holding it (the chart's way). Not both.
       */
      redisSentinelPassword: z.optional(z.string().check(z.minLength(1))),
      /** REDIS_CLUSTER_NODES: Redis Cluster: some of its nodes, `host:port,host:port` (the rest is discovered). */
      redisClusterNodes: z.optional(z.array(HostPort).check(z.minLength(1))),
      /** REDIS_USERNAME: ACL user for the Redis servers (all three topologies); default none (`default`). */
      redisUsername: z.optional(z.string().check(z.minLength(1))),
      /**
       * REDIS_PASSWORD: password of the Redis servers (all three topologies); overrides one in REDIS_URL.
       * Never logged. Or REDIS_PASSWORD_FILE: a file holding it (the chart's way). Not both.
       */
      redisPassword: z.optional(z.string().check(z.minLength(1))),
      /** REDIS_TLS: connect with TLS (all three topologies; sentinels too). `rediss://` implies it. Default false. */
      redisTls: z._default(z.union([z.boolean(), z.stringbool()]), false),
      /** REDIS_TLS_CA_FILE: PEM file of the CA that signed the Redis servers' certificates (default: the system's CAs). */
      redisTlsCaFile: z.optional(z.string().check(z.minLength(1))),
      /**
       * REDIS_ACK_REPLICAS: a webhook is answered 202 only once this many replicas acknowledged its
       * job (`WAIT`, on a connection of its own); when they do not within REDIS_ACK_TIMEOUT_MS the
       * answer is 503 and the sender retries. Default 1 with REDIS_SENTINELS, else 0 (no wait).
       * Not supported with REDIS_CLUSTER_NODES (a batch spans masters).
       */
      redisAckReplicas: z.optional(z.coerce.number().check(z.int(), z.gte(0), z.lte(16))),
      /** REDIS_ACK_TIMEOUT_MS: how long a replica acknowledgement is waited for. Default 1000. */
      redisAckTimeoutMs: z._default(Millis, 1_000),
      /**
       * QUEUE_PREFIX: BullMQ key prefix, so several installations can share one Redis. No `{}`: the
       * hash tag of every key is in the queue name (`vm-node-{<node>}`), one slot per queue; a tag in
       * the prefix would put the whole installation in one slot of a Cluster.
       */
      queuePrefix: z._default(z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - only')), 'volume-medic'),
      /** VOLUME_MEDIC_TOKEN: bearer token(s) the webhook senders must present; comma-separated to rotate. */
      tokens: z._default(z.array(z.string().check(z.minLength(16, 'a token must be at least 16 characters'))), []),
      /**
       * ALLOW_UNAUTHENTICATED: the receiver starts without any token only when this is true (then it
       * warns at start and on /readyz). Default false: no token is a configuration error (exit 2).
       */
      allowUnauthenticated: z._default(z.union([z.boolean(), z.stringbool()]), false),
      /**
       * SIGNING_KEYS_DIR: directory of signing keys (a mounted Secret), one file per key named
       * `<role>.<key id>` (roles: receiver, cluster-worker, node-agent), each at least 32 random bytes
       * in base64. Every job and operator control is sealed (HMAC-SHA256) by the role that issues it
       * and verified before an agent acts. Required unless ALLOW_UNSIGNED_WORK=true.
       */
      signingKeysDir: z.optional(z.string().check(z.minLength(1))),
      /**
       * CONTROL_SIGNING_KEY_FILE (receiver) and CONTROL_VERIFY_CERT_FILE (every process): operator
       * controls (modes, pauses, approval decisions) signed with an ECDSA P-256 key only the receiver
       * holds, checked with its certificate(s) (src/core/trust/control-keys.ts), so a node that can read
       * the receiver's HMAC key (agents verify work with it) still cannot forge a control. Unset:
       * controls are sealed with the receiver's HMAC key like work. The chart sets both.
       */
      controlSigningKeyFile: z.optional(z.string().check(z.minLength(1))),
      controlVerifyCertFile: z.optional(z.string().check(z.minLength(1))),
      /**
       * ENROL_URL (node agent, cluster worker): the receiver's base URL (https://...). Set, the process
       * holds no issuer root: at start it enrols (POST /v1/enrol with its projected service-account
       * token) and gets only the work keys of its own queue (src/core/trust/work-keys.ts), and the Redis
       * user of its node when the receiver manages them. Needs CONTROL_VERIFY_CERT_FILE. The chart sets it.
       */
      enrolUrl: z.optional(z.url({ protocol: /^https?$/ })),
      /** ENROL_TOKEN_FILE: the projected service-account token (audience ENROL_AUDIENCE), read again at every enrolment. */
      enrolTokenFile: z._default(z.string().check(z.minLength(1)), '/var/run/secrets/volume-medic/enrol/token'),
      /** ENROL_CA_FILE: PEM certificate(s) the receiver's HTTPS certificate must chain to; unset: the system's. */
      enrolCaFile: z.optional(z.string().check(z.minLength(1))),
      /** ENROL_AUDIENCE: the audience enrolment tokens are issued for and checked against (TokenReview). */
      enrolAudience: z._default(z.string().check(z.minLength(1)), 'volume-medic'),
      /**
       * ENROL_NODE_AGENTS / ENROL_CLUSTER_WORKERS (receiver): the service accounts (`<namespace>/<name>`)
       * whose pods may enrol as a node's agent (for the node the pod runs on, only) and as the cluster
       * worker. Unset: enrolment is off (POST /v1/enrol answers 404).
       */
      enrolNodeAgents: z._default(z.array(z.string().check(z.regex(/^[a-z0-9-]{1,63}\/[a-z0-9.-]{1,253}$/, '<namespace>/<service account>'))), []),
      /**
       * REDIS_NODE_USERS (receiver, with enrolment): each enrolled node agent gets a Redis user of its
       * own, allowed its own queue's keys only, created on every server of the topology (Redis
       * replicates no ACL) and kept there (src/adapters/redis/node-redis-users.ts); the receiver's Redis user
       * then needs `+acl|setuser +acl|deluser +acl|users`. A node's user is removed when its Node
       * object is deleted (KUBE_WATCH). Default false: agents use the Redis user they are given.
       */
      redisNodeUsers: z._default(z.union([z.boolean(), z.stringbool()]), false),
      /**
       * NODE_REDIS_BUDGET_MIB (receiver, with REDIS_NODE_USERS): the most a node's own keys
       * (`<prefix>:vm-node-{<node>}:*`) may hold in Redis, in MiB, by MEMORY USAGE. The receiver that
       * exports the fleet-wide series reads INFO memory every second and counts every node's keys
       * when a primary is at 80% of its maxmemory, and every NODE_REDIS_BUDGET_SCAN_SECONDS anyway.
       * A node over it gets its Redis user back read-only (its connections closed), loses its own
       * keys (the bulk of what it wrote first) until it holds its budget again, and stays so until
       * an operator releases it (POST /v1/redis-budget/release); alert VolumeMedicNodeRedisOverBudget.
       * A busy node holds up to ~10 MiB (20 jobs of 8 dead maps and a full audit list;
       * docs/decisions/0006). Keep it well under half of maxmemory. 0: off. Default 32.
       */
      nodeRedisBudgetMib: z._default(z.coerce.number().check(z.gte(0), z.lte(1_048_576)), 32),
      /** NODE_REDIS_BUDGET_SCAN_SECONDS: how often every node's keys are counted when Redis is not under pressure. Default 300. */
      nodeRedisBudgetScanSeconds: z._default(z.coerce.number().check(z.int(), z.gte(1)), 300),
      enrolClusterWorkers: z._default(z.array(z.string().check(z.regex(/^[a-z0-9-]{1,63}\/[a-z0-9.-]{1,253}$/, '<namespace>/<service account>'))), []),
      /** SIGNING_KEY_ID: the key id this process seals with (rotation); default the greatest id of its role. */
      signingKeyId: z.optional(z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/))),
      /**
       * ALLOW_UNSIGNED_WORK: start without signing keys, and accept work and controls without a seal
       * (a bad seal is still refused). For development and for rolling signing out; default false.
       */
      allowUnsignedWork: z._default(z.union([z.boolean(), z.stringbool()]), false),
      /** WORK_SEAL_TTL_SECONDS: how long sealed work stays valid (must exceed APPROVAL_TTL_SECONDS). Default 86400. */
      workSealTtlSeconds: z._default(z.coerce.number().check(z.int(), z.positive()), 86_400),
      /**
       * OPERATOR_AUTH: how operators (modes, pauses, breakers, approvals, placeholder release, job
       * reads, the /ui dashboard) are identified. `kubernetes` (default): a Kubernetes bearer token,
       * checked with TokenReview and authorised with SubjectAccessReview on the volume-medic.io verbs
       * (README, "Operator identity"), through the pod's service account or a kubeconfig, as
       * KUBE_WATCH; without Kubernetes access every operator route answers 503 saying so. `off`:
       * operator routes answer 403. `insecure`: anyone reaching the port is operator
       * `insecure-anonymous` with every verb; only with ALLOW_UNAUTHENTICATED=true (local trials).
       * The webhook token never opens an operator route, whatever this says.
       */
      operatorAuth: z._default(z.enum(['kubernetes', 'off', 'insecure']), 'kubernetes'),
      /** OPERATOR_TOKEN_AUDIENCES: audiences an operator token must be meant for (TokenReview spec.audiences); default none: the API server's own, as `kubectl create token` gives. */
      operatorTokenAudiences: z._default(z.array(z.string().check(z.minLength(1))), []),
      /** OPERATOR_TOKEN_CACHE_SECONDS: how long an accepted token is remembered (by its SHA-256) before it is reviewed again. 0: every request. Default 30. */
      operatorTokenCacheSeconds: z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(600)), 30),
      /** OPERATOR_ACCESS_CACHE_SECONDS: how long a SubjectAccessReview answer (allowed or not) is remembered. 0: every request. Default 10. */
      operatorAccessCacheSeconds: z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(600)), 10),
      /**
       * AUTH_PROXY_CIDRS: TCP peers (an oauth2-proxy style auth proxy) whose AUTH_PROXY_USER_HEADER
       * and AUTH_PROXY_GROUPS_HEADER are believed as the operator's identity (still authorised with
       * SubjectAccessReview). From any other address those headers are ignored. The proxy must
       * overwrite them on every request. Default none.
       */
      authProxyCidrs: z._default(z.array(z.string().check(z.refine(isCidr, 'an IPv4 or IPv6 network in CIDR form, e.g. 10.0.0.0/8'))), []),
      /** AUTH_PROXY_USER_HEADER: the auth proxy's user header. Default X-Forwarded-User. */
      authProxyUserHeader: z._default(z.string().check(z.regex(/^[A-Za-z0-9-]{1,64}$/, 'an HTTP header name')), 'X-Forwarded-User'),
      /** AUTH_PROXY_GROUPS_HEADER: the auth proxy's groups header (comma-separated groups). Default X-Forwarded-Groups. */
      authProxyGroupsHeader: z._default(z.string().check(z.regex(/^[A-Za-z0-9-]{1,64}$/, 'an HTTP header name')), 'X-Forwarded-Groups'),
      /**
       * TRUSTED_PROXY_CIDRS: reverse proxies (ingress controllers) whose X-Forwarded-For and
       * X-Forwarded-Proto are believed: the client address failed attempts count against, and
       * whether the dashboard's cookie is Secure. Default none: the TCP peer, and the socket's own
       * protocol.
       */
      trustedProxyCidrs: z._default(z.array(z.string().check(z.refine(isCidr, 'an IPv4 or IPv6 network in CIDR form, e.g. 10.0.0.0/8'))), []),
      /**
       * AUTH_FAILURES_PER_MINUTE: failed authentications (bearer tokens, dashboard sign-ins,
       * refused enrolments and agents' breaker asks) one client address may make per minute, as a
       * bucket of this size refilled at this rate; beyond it every attempt from the address gets
       * 429 with Retry-After. 0: no limit. Default 20.
       */
      authFailuresPerMinute: z._default(z.coerce.number().check(z.int(), z.gte(0)), 20),
      /** BODY_LIMIT: largest webhook body accepted, in bytes (larger: 413). */
      bodyLimit: z._default(z.coerce.number().check(z.int(), z.gte(1024)), 1024 * 1024),
      /**
       * HTTP_HEADERS_TIMEOUT_MS: how long a client may take to send a request's headers, and
       * HTTP_REQUEST_TIMEOUT_MS: the whole request, body included (Node's default is 300 s, which
       * lets a few slow senders hold sockets and memory). A request over either gets 503 + Retry-After (src/control/receiver/listen.ts) and its
       * socket is closed. Webhook bodies are at most BODY_LIMIT and come from nearby senders.
       * Defaults 10 s and 30 s; the headers timeout may not exceed the request timeout.
       */
      httpHeadersTimeoutMs: z._default(Millis, 10_000),
      httpRequestTimeoutMs: z._default(Millis, 30_000),
      /**
       * TLS_CERT_FILE / TLS_KEY_FILE: the receiver serves HTTPS with this certificate chain and key
       * (PEM; a mounted Secret's tls.crt and tls.key), read again when either file changes, without
       * a restart. Both or neither.
       */
      tlsCertFile: z.optional(z.string().check(z.minLength(1))),
      tlsKeyFile: z.optional(z.string().check(z.minLength(1))),
      /**
       * ALLOW_PLAINTEXT_HTTP: the receiver serves plain HTTP only when this says so by name: bearer
       * tokens, operators' Kubernetes tokens and the dashboard's cookie would cross the network in
       * clear. Default false: no TLS_CERT_FILE/TLS_KEY_FILE is a configuration error (exit 2).
       */
      allowPlaintextHttp: z._default(z.union([z.boolean(), z.stringbool()]), false),
      /** ENQUEUE_TIMEOUT_MS: how long storing jobs may take before the receiver answers 503. */
      enqueueTimeoutMs: z._default(Millis, 5_000),
      /** NODE_RECOVERY_ALERTS: alert names whose resolution means a node is back. */
      nodeRecoveryAlerts: z._default(z.array(z.string().check(z.minLength(1))), ['KubeNodeNotReady', 'KubeNodeUnreachable']),
      /**
       * NPD_EVENT_SOURCES: node-problem-detector monitors whose LocalDiskLost Events are believed
       * (NPD writes a monitor config's `source` as the Event's source.component). Default
       * `local-pv-monitor`, the monitor in deploy/integrations/npd. Other reporters: see event-trust.ts.
       */
      npdEventSources: z._default(
        z.array(z.string().check(z.regex(/^[A-Za-z0-9._:-]{1,253}$/, 'a component name: letters, digits, . _ : -'))).check(z.minLength(1)),
        [...DEFAULT_NPD_EVENT_SOURCES],
      ),
      /** NPD_EVENT_NAMESPACE: the namespace NPD writes its Events in (its --event-namespace; `default` when that is unset). */
      npdEventNamespace: z._default(z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace name')), 'default'),
      /** DEDUP_WINDOW_SECONDS: when set, overrides every runbook's deduplication window (see catalogue/policy.ts). */
      dedupWindowSeconds: z.optional(z.coerce.number().check(z.int(), z.positive())),
      /** NODE_NAME: the node a node agent serves (required by the node agent only). */
      nodeName: z.optional(NodeName),
      /** DEFAULT_MODE: mode of every runbook not named in RUNBOOK_MODES. */
      defaultMode: z._default(Mode, 'dry-run'),
      /** RUNBOOK_MODES: per runbook, e.g. `local-pv-placeholder=enforce,residual-multipath-cleanup=dry-run`. */
      runbookModes: z._default(z.partialRecord(RunbookName, Mode), {}),
      /** LOCK_DURATION_MS: a worker's job lock; a job whose worker died is taken again after about this long. */
      lockDurationMs: z._default(Millis, 30_000),
      /**
       * NO_AGENT_DEADLINE_SECONDS: cluster worker: a job waiting on a node queue that no node agent
       * serves fails (with a reason naming the missing agent) once it has waited this long; before
       * that it is reported (volume_medic_jobs_without_agent, a warning, a `NoAgent` Event on the
       * Node) after a grace of max(60 s, 2 x LOCK_DURATION_MS + 30 s). 0: report only, never fail.
       * Default 900.
       */
      noAgentDeadlineSeconds: z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(7 * 86_400)), 900),
      /** STATE_DIR: where the node agent keeps what must survive restarts (placeholder records, journals). */
      stateDir: z._default(z.string(), '/var/lib/volume-medic'),
      /** HOST_ROOT: where the host's / is visible to the node agent (`/host` in a DaemonSet pod). */
      hostRoot: z._default(z.string(), '/'),
      /** HOST_NSENTER: run host commands through `nsenter -t 1 -m -n --` (node agent in a privileged container with hostPID). */
      hostNsenter: z._default(z.boolean(), false),
      /**
       * PLACEHOLDER_CHECK_SECONDS: node agent: how often it looks whether the disk of one of its Local
       * PV placeholders came back (sysfs), and if so asks for the placeholder's release (verified like
       * any detector's release). It also looks at start. 0: at start only. Default 300.
       */
      placeholderCheckSeconds: z._default(z.coerce.number().check(z.int(), z.gte(0)), 300),
      /** PLACEHOLDER_OPT_IN_LABEL: node label (key=value) that allows Local PV placeholders on a node. */
      placeholderOptInLabel: z._default(
        z.string().check(z.regex(/^[A-Za-z0-9./_-]{1,316}=[A-Za-z0-9._-]{0,63}$/, 'expected <label key>=<value>')),
        'volume-medic.io/local-pv-placeholder=enabled',
      ),
      /** NODE_LABELS: the node's labels (k=v,...) when the agent runs without cluster access (npm start, tests). */
      nodeLabels: z.optional(z.record(z.string(), z.string())),
      /**
       * KUBE_WATCH: watch Nodes and Events, reconcile periodically, and answer triage's lookups from
       * the API server. Access: the pod's service account when KUBERNETES_SERVICE_HOST is set, else
       * the kubeconfig (KUBECONFIG, which may list several files, else ~/.kube/config). Default false.
       */
      kubeWatch: z._default(z.union([z.boolean(), z.stringbool()]), false),
      /**
       * FLEET_METRICS_LEASE_SECONDS: receivers with Kubernetes access (KUBE_WATCH, or in a pod) elect
       * one of them on a Lease of this duration; only the leader exports the fleet-wide series (read
       * from Redis) on /metrics, so sums over replicas never double. 0: no election, every receiver
       * exports them (as one without Kubernetes access does). Default 15.
       */
      fleetMetricsLeaseSeconds: z._default(
        z.coerce.number().check(
          z.int(),
          z.gte(0),
          z.refine((v) => v === 0 || v >= 2, 'expected 0 (no election) or at least 2'),
        ),
        15,
      ),
      /** KUBE_RECONCILE_SECONDS: period of the reconcile (recently Ready nodes, pods stuck creating); 0: at start only. */
      kubeReconcileSeconds: z._default(z.coerce.number().check(z.int(), z.gte(0)), 300),
      /** APPROVAL_HIGH_RISK: enforce-mode steps flagged high risk (`risk: 'high'`) wait for POST /v1/jobs/:id/approve. Default true. */
      approvalHighRisk: z._default(z.union([z.boolean(), z.stringbool()]), true),
      /** APPROVAL_RUNBOOKS: runbooks whose every destructive step waits for approval (comma-separated). Default none. */
      approvalRunbooks: z._default(z.array(RunbookName), []),
      /** APPROVAL_MAX_DESTRUCTIVE_STEPS: a plan with more destructive steps than this waits for approval before its first one; 0: no limit. Default 10. */
      approvalMaxDestructiveSteps: z._default(z.coerce.number().check(z.int(), z.gte(0)), 10),
      /** APPROVAL_TTL_SECONDS: an approval request not decided within this expires (the job fails, refused); an approval is good for as long. Default 3600. */
      approvalTtlSeconds: z._default(z.coerce.number().check(z.int(), z.positive()), 3600),
      /** BREAKER_NODE_DESTRUCTIVE_PER_HOUR: destructive steps one node may run in any hour before its breaker trips; 0: no cap. Default 20. */
      breakerNodeDestructivePerHour: z._default(z.coerce.number().check(z.int(), z.gte(0)), 20),
      /** BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR: destructive steps the whole fleet may run in any hour before the cluster breaker trips; 0: no cap. Default 100. */
      breakerClusterDestructivePerHour: z._default(z.coerce.number().check(z.int(), z.gte(0)), 100),
      /** BREAKER_STORM_NODES: more nodes than this starting jobs within BREAKER_STORM_WINDOW_SECONDS trips the storm breaker; 0: off. Default 5. */
      breakerStormNodes: z._default(z.coerce.number().check(z.int(), z.gte(0)), 5),
      /** BREAKER_STORM_WINDOW_SECONDS: the storm breaker's window. Default 600. */
      breakerStormWindowSeconds: z._default(z.coerce.number().check(z.int(), z.positive()), 600),
      /** CONTROLS_RECHECK_SECONDS: how often a job parked by a pause, an approval or a breaker looks again. Default 15. */
      controlsRecheckSeconds: z._default(z.coerce.number().check(z.positive()), 15),
      /**
       * UI_SESSION_TTL_SECONDS: how long a dashboard sign-in lasts (server-side, in Redis; signing out
       * ends it at once). The operator's RBAC is checked again on every request regardless. Default
       * 28800 (8 h). (The queue board is always read-only; DASHBOARD_WRITE is gone.)
       */
      uiSessionTtlSeconds: z._default(z.coerce.number().check(z.int(), z.gte(60), z.lte(7 * 24 * 3600)), 8 * 3600),
      /** RESIDUAL_MAX_MAPS_PER_JOB: more residual maps than this in one job: refuse and ask a human. */
      residualMaxMapsPerJob: z._default(z.coerce.number().check(z.int(), z.gte(1)), 8),
      /** RESIDUAL_RELEASE_QUEUED_IO: `auto` releases a dead map's queued I/O (fail_if_no_path) after every other interlock passed; `require-approval` leaves it. */
      residualReleaseQueuedIo: z._default(z.enum(['auto', 'require-approval']), 'auto'),
      /**
       * RESIDUAL_ATTACHMENTS_UNKNOWN: when the node's VolumeAttachments cannot be known: `refuse`
       * (default: unknown means refuse), or `proceed` on the other interlocks (an explicit operator
       * choice, named as such in every step's evidence).
       */
      residualAttachmentsUnknown: z._default(z.enum(['proceed', 'refuse']), 'refuse'),
      /**
       * RESIDUAL_ALL_DEAD_GRACE_SECONDS: a map's queued I/O is released only after every path has
       * been dead this long over at least two observations (or across a reboot). Default 120.
       */
      residualAllDeadGraceSeconds: z._default(z.coerce.number().check(z.int(), z.gte(0)), 120),
      /**
       * RESIDUAL_VICTIM_OPENERS: process names (comm) the operator adds to the known victims of dead
       * paths (udev workers, blkid, lsblk, multipath tools, ...): openers that may be released.
       */
      residualVictimOpeners: z._default(z.array(z.string().check(z.regex(/^[^\s,]{1,15}$/, 'a process name (comm) of at most 15 characters'))), []),
      /** RESIDUAL_PROBE_TIMEOUT_MS: hard deadline of the read probe of a map (probes run in parallel). */
      residualProbeTimeoutMs: z._default(z.coerce.number().check(z.int(), z.positive()), 10_000),
      /** CEPH_CONF: cluster worker: path of ceph.conf (Ceph's default search when unset). Never logged. */
      cephConf: z.optional(z.string()),
      /** CEPH_KEYRING: cluster worker: path of the keyring (Ceph's default when unset). Never logged. */
      cephKeyring: z.optional(z.string()),
      /** CEPH_ID: cluster worker: Ceph client id without `client.` (`admin` when unset). */
      cephId: z.optional(z.string().check(z.regex(/^[A-Za-z0-9._-]{1,64}$/))),
      /** RBD_FENCING: fence a watcher whose node is gone with `ceph osd blocklist add`: `off`, `approval` (refuse: needs approval), `on`. */
      rbdFencing: z._default(z.enum(['off', 'approval', 'on']), 'approval'),
      /** RBD_BLOCKLIST_EXPIRY_SECONDS: how long a blocklist entry lasts. */
      rbdBlocklistExpirySeconds: z._default(z.coerce.number().check(z.int(), z.positive()), 3600),
      /**
       * RBD_FENCE_NOT_READY_SECONDS: a watcher's node must have been NotReady (Ready False or Unknown,
       * by its condition's lastTransitionTime) this long before its client is fenced; until then the
       * job waits. A node with the `node.kubernetes.io/out-of-service` taint is fenced at once.
       * Default 300.
       */
      rbdFenceNotReadySeconds: z._default(z.coerce.number().check(z.int(), z.gte(0)), 300),
      /**
       * RBD_FENCE_CIDRS: networks whose watchers may be fenced though no Node lists their address
       * (e.g. a known external client network), comma-separated IPv4/IPv6 CIDRs. Default none: a
       * watcher at an address no Node has is never fenced.
       */
      rbdFenceCidrs: z._default(z.array(z.string().check(z.refine(isCidr, 'an IPv4 or IPv6 network in CIDR form, e.g. 192.0.2.0/24 or 2001:db8::/32'))), []),
      /**
       * RBD_HANDOFF_VERIFY_SECONDS: after handing the unmap to the watcher's node, how long the
       * cluster half waits for that node's watch to leave the image before it fails (and is retried).
       * 0: only check the hand-over.
       */
      rbdHandoffVerifySeconds: z._default(z.coerce.number().check(z.int(), z.nonnegative()), 120),
      /** RBD_FORCE_UNMAP: `rbd unmap -o force` when a plain unmap stays busy: `never`, or `no-live-workload`. */
      rbdForceUnmap: z._default(z.enum(['never', 'no-live-workload']), 'never'),
      /** KUBELET_ROOT_DIR: kubelet's --root-dir on the nodes (stale kubelet mounts live under it). */
      kubeletRootDir: z._default(z.string().check(z.regex(/^\/[A-Za-z0-9._/-]*$/)), '/var/lib/kubelet'),
      /** LOG_LEVEL: pino level. */
      logLevel: z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
    })
    .check(
      z.superRefine((c, ctx) => {
        // Exactly one topology. Issues name the setting (load.ts turns that into the variable's name).
        const set = (['redisUrl', 'redisSentinels', 'redisClusterNodes'] as const).filter((k) => c[k] !== undefined);
        if (set.length > 1) {
          for (const k of set.slice(1))
            ctx.addIssue({
              code: 'custom',
              path: [k],
              message: `set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (also set: ${set
                .filter((o) => o !== k)
                .map(envName)
                .join(', ')})`,
            });
        }
        if (c.redisSentinels && !c.redisSentinelName)
          ctx.addIssue({
            code: 'custom',
            path: ['redisSentinelName'],
            message: 'required with REDIS_SENTINELS: the name of the primary the sentinels monitor',
          });
        if (!c.redisSentinels && c.redisSentinelName)
          ctx.addIssue({ code: 'custom', path: ['redisSentinelName'], message: 'only meaningful with REDIS_SENTINELS' });
        if (!c.redisSentinels && c.redisSentinelPassword)
          ctx.addIssue({ code: 'custom', path: ['redisSentinelPassword'], message: 'only meaningful with REDIS_SENTINELS' });
        if (c.redisClusterNodes && (c.redisAckReplicas ?? 0) > 0)
          ctx.addIssue({
            code: 'custom',
            path: ['redisAckReplicas'],
            message: 'not supported with REDIS_CLUSTER_NODES (a batch of jobs spans masters); set 0',
          });
      }),
    );
}
export type Config = z.infer<ReturnType<typeof configSchema>>;

const envName = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();
