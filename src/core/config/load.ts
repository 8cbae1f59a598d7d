import { accessSync, constants, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { z } from '../zod.ts';
import { configSchema, type Config } from './schema.ts';
import { redactUrl, redactUrlsIn } from './redact-url.ts';

// Configuration is read once at start and validated; a bad value stops the process with a
// message naming the variable, what it expected and what it got. Secrets (tokens) are never
// echoed in those messages.

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

const list = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

function modes(v: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list(v)) {
    const [name, mode, ...rest] = pair.split('=').map((s) => s.trim());
    if (!name || !mode || rest.length > 0) throw new ConfigError(`RUNBOOK_MODES: "${pair}" is not <runbook>=<dry-run|enforce>`);
    out[name] = mode;
  }
  return out;
}

function labels(v: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list(v)) {
    const i = pair.indexOf('=');
    if (i <= 0) throw new ConfigError(`NODE_LABELS: "${pair}" is not <key>=<value>`);
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}

/** Environment variable -> config key, with how to read its string. */
const ENV: Record<string, [keyof Config, (v: string) => unknown]> = {
  PORT: ['port', (v) => v],
  LISTEN_ADDRESS: ['listenAddress', (v) => v],
  PROBE_PORT: ['probePort', (v) => v],
  PROBE_LISTEN_ADDRESS: ['probeListenAddress', (v) => v],
  REDIS_URL: ['redisUrl', (v) => v],
  REDIS_SENTINELS: ['redisSentinels', list],
  REDIS_SENTINEL_NAME: ['redisSentinelName', (v) => v],
  REDIS_SENTINEL_PASSWORD: ['redisSentinelPassword', (v) => v],
  REDIS_CLUSTER_NODES: ['redisClusterNodes', list],
  REDIS_USERNAME: ['redisUsername', (v) => v],
  REDIS_PASSWORD: ['redisPassword', (v) => v],
  REDIS_TLS: ['redisTls', (v) => v],
  REDIS_TLS_CA_FILE: ['redisTlsCaFile', (v) => v],
  REDIS_ACK_REPLICAS: ['redisAckReplicas', (v) => v],
  REDIS_ACK_TIMEOUT_MS: ['redisAckTimeoutMs', (v) => v],
  QUEUE_PREFIX: ['queuePrefix', (v) => v],
  VOLUME_MEDIC_TOKEN: ['tokens', list],
  ALLOW_UNAUTHENTICATED: ['allowUnauthenticated', (v) => v],
  SIGNING_KEYS_DIR: ['signingKeysDir', (v) => v],
  SIGNING_KEY_ID: ['signingKeyId', (v) => v],
  ENROL_URL: ['enrolUrl', (v) => v],
  ENROL_TOKEN_FILE: ['enrolTokenFile', (v) => v],
  ENROL_CA_FILE: ['enrolCaFile', (v) => v],
  ENROL_AUDIENCE: ['enrolAudience', (v) => v],
  ENROL_NODE_AGENTS: ['enrolNodeAgents', list],
  ENROL_CLUSTER_WORKERS: ['enrolClusterWorkers', list],
  REDIS_NODE_USERS: ['redisNodeUsers', (v) => v],
  NODE_REDIS_BUDGET_MIB: ['nodeRedisBudgetMib', (v) => v],
  NODE_REDIS_BUDGET_SCAN_SECONDS: ['nodeRedisBudgetScanSeconds', (v) => v],
  CONTROL_SIGNING_KEY_FILE: ['controlSigningKeyFile', (v) => v],
  CONTROL_VERIFY_CERT_FILE: ['controlVerifyCertFile', (v) => v],
  ALLOW_UNSIGNED_WORK: ['allowUnsignedWork', (v) => v],
  WORK_SEAL_TTL_SECONDS: ['workSealTtlSeconds', (v) => v],
  BODY_LIMIT: ['bodyLimit', (v) => v],
  OPERATOR_AUTH: ['operatorAuth', (v) => v],
  OPERATOR_TOKEN_AUDIENCES: ['operatorTokenAudiences', list],
  OPERATOR_TOKEN_CACHE_SECONDS: ['operatorTokenCacheSeconds', (v) => v],
  OPERATOR_ACCESS_CACHE_SECONDS: ['operatorAccessCacheSeconds', (v) => v],
  AUTH_PROXY_CIDRS: ['authProxyCidrs', list],
  AUTH_PROXY_USER_HEADER: ['authProxyUserHeader', (v) => v],
  AUTH_PROXY_GROUPS_HEADER: ['authProxyGroupsHeader', (v) => v],
  TRUSTED_PROXY_CIDRS: ['trustedProxyCidrs', list],
  AUTH_FAILURES_PER_MINUTE: ['authFailuresPerMinute', (v) => v],
  ENQUEUE_TIMEOUT_MS: ['enqueueTimeoutMs', (v) => v],
  HTTP_HEADERS_TIMEOUT_MS: ['httpHeadersTimeoutMs', (v) => v],
  HTTP_REQUEST_TIMEOUT_MS: ['httpRequestTimeoutMs', (v) => v],
  TLS_CERT_FILE: ['tlsCertFile', (v) => v],
  TLS_KEY_FILE: ['tlsKeyFile', (v) => v],
  ALLOW_PLAINTEXT_HTTP: ['allowPlaintextHttp', (v) => v],
  NODE_RECOVERY_ALERTS: ['nodeRecoveryAlerts', list],
  NPD_EVENT_SOURCES: ['npdEventSources', list],
  NPD_EVENT_NAMESPACE: ['npdEventNamespace', (v) => v],
  DEDUP_WINDOW_SECONDS: ['dedupWindowSeconds', (v) => v],
  NODE_NAME: ['nodeName', (v) => v],
  DEFAULT_MODE: ['defaultMode', (v) => v],
  RUNBOOK_MODES: ['runbookModes', modes],
  LOCK_DURATION_MS: ['lockDurationMs', (v) => v],
  NO_AGENT_DEADLINE_SECONDS: ['noAgentDeadlineSeconds', (v) => v],
  STATE_DIR: ['stateDir', (v) => v],
  HOST_ROOT: ['hostRoot', (v) => v],
  HOST_NSENTER: ['hostNsenter', (v) => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v)],
  PLACEHOLDER_OPT_IN_LABEL: ['placeholderOptInLabel', (v) => v],
  PLACEHOLDER_CHECK_SECONDS: ['placeholderCheckSeconds', (v) => v],
  NODE_LABELS: ['nodeLabels', labels],
  RESIDUAL_MAX_MAPS_PER_JOB: ['residualMaxMapsPerJob', (v) => v],
  RESIDUAL_RELEASE_QUEUED_IO: ['residualReleaseQueuedIo', (v) => v],
  RESIDUAL_ATTACHMENTS_UNKNOWN: ['residualAttachmentsUnknown', (v) => v],
  RESIDUAL_PROBE_TIMEOUT_MS: ['residualProbeTimeoutMs', (v) => v],
  RESIDUAL_ALL_DEAD_GRACE_SECONDS: ['residualAllDeadGraceSeconds', (v) => v],
  RESIDUAL_VICTIM_OPENERS: ['residualVictimOpeners', list],
  CEPH_CONF: ['cephConf', (v) => v],
  CEPH_KEYRING: ['cephKeyring', (v) => v],
  CEPH_ID: ['cephId', (v) => v],
  RBD_FENCING: ['rbdFencing', (v) => v],
  RBD_BLOCKLIST_EXPIRY_SECONDS: ['rbdBlocklistExpirySeconds', (v) => v],
  RBD_FENCE_NOT_READY_SECONDS: ['rbdFenceNotReadySeconds', (v) => v],
  RBD_FENCE_CIDRS: ['rbdFenceCidrs', list],
  RBD_HANDOFF_VERIFY_SECONDS: ['rbdHandoffVerifySeconds', (v) => v],
  RBD_FORCE_UNMAP: ['rbdForceUnmap', (v) => v],
  KUBELET_ROOT_DIR: ['kubeletRootDir', (v) => v],
  LOG_LEVEL: ['logLevel', (v) => v],
  KUBE_WATCH: ['kubeWatch', (v) => v],
  KUBE_RECONCILE_SECONDS: ['kubeReconcileSeconds', (v) => v],
  FLEET_METRICS_LEASE_SECONDS: ['fleetMetricsLeaseSeconds', (v) => v],
  APPROVAL_HIGH_RISK: ['approvalHighRisk', (v) => v],
  APPROVAL_RUNBOOKS: ['approvalRunbooks', list],
  APPROVAL_MAX_DESTRUCTIVE_STEPS: ['approvalMaxDestructiveSteps', (v) => v],
  APPROVAL_TTL_SECONDS: ['approvalTtlSeconds', (v) => v],
  BREAKER_NODE_DESTRUCTIVE_PER_HOUR: ['breakerNodeDestructivePerHour', (v) => v],
  BREAKER_CLUSTER_DESTRUCTIVE_PER_HOUR: ['breakerClusterDestructivePerHour', (v) => v],
  BREAKER_STORM_NODES: ['breakerStormNodes', (v) => v],
  BREAKER_STORM_WINDOW_SECONDS: ['breakerStormWindowSeconds', (v) => v],
  CONTROLS_RECHECK_SECONDS: ['controlsRecheckSeconds', (v) => v],
  UI_SESSION_TTL_SECONDS: ['uiSessionTtlSeconds', (v) => v],
};
const ENV_OF = Object.fromEntries(Object.entries(ENV).map(([env, [key]]) => [key, env]));

/**
 * Secret settings a process may read from a file instead (`<NAME>_FILE`, e.g. a mounted Secret:
 * the chart's way), so the secret is in no process environment: not in /proc/<pid>/environ, not
 * in what `env` or a debugger shows, not handed to every dependency through process.env. One of
 * the two, never both. The file's text is the value, less its trailing newline.
 */
const FROM_FILE: Record<string, [string, keyof Config]> = {
  REDIS_URL_FILE: ['REDIS_URL', 'redisUrl'],
  REDIS_PASSWORD_FILE: ['REDIS_PASSWORD', 'redisPassword'],
  REDIS_SENTINEL_PASSWORD_FILE: ['REDIS_SENTINEL_PASSWORD', 'redisSentinelPassword'],
};

function readFileConfig(path: string, known: Readonly<Record<string, unknown>>): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`VOLUME_MEDIC_CONFIG: cannot read ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    // Loaded only when a file is named: the agents read their environment alone.
    const { parse: parseYaml } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
    parsed = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`VOLUME_MEDIC_CONFIG: ${path} is not valid YAML/JSON: ${(err as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`VOLUME_MEDIC_CONFIG: ${path} must hold a mapping of settings`);
  const unknown = Object.keys(parsed).filter((k) => !(k in known));
  if (unknown.length > 0) throw new ConfigError(`VOLUME_MEDIC_CONFIG: ${path}: unknown setting(s) ${unknown.join(', ')}`);
  return parsed as Record<string, unknown>;
}

/**
 * Reads the secret settings of FROM_FILE that name a file into `raw`; returns, per setting read so,
 * how a message names it. An error names the variable and the path, never the file's text.
 */
function readSecretFiles(env: Env, raw: Record<string, unknown>): Map<string, string> {
  const read = new Map<string, string>();
  for (const [fileVar, [name, key]] of Object.entries(FROM_FILE)) {
    const path = env[fileVar];
    if (path === undefined || path === '') continue;
    if (env[name] !== undefined && env[name] !== '') throw new ConfigError(`${fileVar}: ${name} is set too; set one of them`);
    try {
      raw[key] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new ConfigError(`${fileVar}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    read.set(key, `${name} (from ${fileVar} ${path})`);
  }
  return read;
}

function readTokenFile(path: string): string[] {
  try {
    return list(readFileSync(path, 'utf8').replace(/\n/g, ','));
  } catch (err) {
    throw new ConfigError(`VOLUME_MEDIC_TOKEN_FILE: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const schema = configSchema();
  const raw: Record<string, unknown> = env['VOLUME_MEDIC_CONFIG'] ? readFileConfig(env['VOLUME_MEDIC_CONFIG'], schema.shape) : {};
  for (const [name, [key, read]] of Object.entries(ENV)) {
    const v = env[name];
    if (v !== undefined && v !== '') raw[key] = read(v);
  }
  const fromFile = readSecretFiles(env, raw);
  if (env['VOLUME_MEDIC_TOKEN_FILE']) {
    raw['tokens'] = [...((raw['tokens'] as string[] | undefined) ?? []), ...readTokenFile(env['VOLUME_MEDIC_TOKEN_FILE'])];
  }
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(`invalid configuration:\n${describe(result.error, raw, fromFile)}`);
  if (result.data.httpHeadersTimeoutMs > result.data.httpRequestTimeoutMs) {
    throw new ConfigError(
      `invalid configuration:\n  HTTP_HEADERS_TIMEOUT_MS: may not exceed HTTP_REQUEST_TIMEOUT_MS (${result.data.httpRequestTimeoutMs}) (got ${result.data.httpHeadersTimeoutMs})`,
    );
  }
  if ((result.data.tlsCertFile === undefined) !== (result.data.tlsKeyFile === undefined)) {
    throw new ConfigError('invalid configuration:\n  TLS_CERT_FILE and TLS_KEY_FILE: set both (the certificate chain and its key) or neither');
  }
  for (const [name, file] of [
    ['TLS_CERT_FILE', result.data.tlsCertFile],
    ['TLS_KEY_FILE', result.data.tlsKeyFile],
  ] as const) {
    if (!file) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      throw new ConfigError(`${name}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  if (result.data.redisTlsCaFile) {
    try {
      accessSync(result.data.redisTlsCaFile, constants.R_OK);
    } catch (err) {
      throw new ConfigError(`REDIS_TLS_CA_FILE: cannot read ${result.data.redisTlsCaFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  return result.data;
}

/** Settings whose values never appear in a message. */
const SECRET = new Set(['tokens', 'redisPassword', 'redisSentinelPassword']);

function describe(error: z.core.$ZodError, raw: Record<string, unknown>, fromFile: ReadonlyMap<string, string>): string {
  return error.issues
    .map((issue) => {
      const key = String(issue.path[0] ?? '');
      const name = fromFile.get(key) ?? ENV_OF[key] ?? key;
      // A URL may carry a password (REDIS_URL): shown with its userinfo hidden, malformed or not.
      const value = raw[key];
      const shown = typeof value === 'string' && value.includes('@') ? redactUrl(value) : value;
      const got = SECRET.has(key) || !(key in raw) ? '' : ` (got ${redactUrlsIn(JSON.stringify(shown))})`;
      return `  ${name}: ${issue.message}${got}`;
    })
    .join('\n');
}

/** The mode a runbook runs in under this configuration. */
export function modeOf(config: Pick<Config, 'defaultMode' | 'runbookModes'>, runbook: string): 'dry-run' | 'enforce' {
  return (config.runbookModes as Record<string, 'dry-run' | 'enforce' | undefined>)[runbook] ?? config.defaultMode;
}
