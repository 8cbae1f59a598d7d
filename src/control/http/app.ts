import express, { type Express } from 'express';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { bearerAuth } from './auth.ts';
import { operatorGate } from './operator-gate.ts';
import { SessionStore } from '../auth/session-store.ts';
import type { OperatorAuth } from '../auth/operator-auth.ts';
import type { FailedAuthLimiter } from '../auth/failed-auth-limiter.ts';
import { jsonBody } from './json-body.ts';
import { refuseCrossSiteWrites } from './cross-site.ts';
import { errorHandler } from './error-answers.ts';
import { healthRoutes } from './routes/health.ts';
import { jobRoutes } from './routes/jobs.ts';
import { breakerSlotRoutes } from './routes/breaker-slots.ts';
import { explainRoutes, webhookRoutes, type WebhookDeps } from './routes/webhooks.ts';
import { controlRoutes } from './routes/controls.ts';
import { incidentRoutes } from './routes/incidents.ts';
import { placeholderRoutes } from './routes/placeholders.ts';
import { uninstallRoutes } from './routes/uninstall.ts';
import { type RedisBudgetPort, redisBudgetRoutes } from './routes/redis-budget.ts';
import { uiRoutes } from './routes/ui.ts';
import { enrolRoutes } from './routes/enrol.ts';
import { nodeCredentialRoutes } from './routes/node-credentials.ts';
import type { NodeRevocation } from '../enrolment/node-revocation.ts';
import type { Enrolment } from '../enrolment/enrolment.ts';
import type { OperatorActions } from '../actions/operator-actions.ts';
import type { JobRetry } from '../actions/job-retry.ts';
import type { JobEventReader } from '../../adapters/kube/job-event-reader.ts';
import type { JobStore } from '../../core/jobs/job-store.ts';
import type { QueueBoard } from '../../adapters/jobstore/queue-board.ts';
import type { JobReader } from './job-reader.ts';
import type { KubeWatchesState } from '../watches/kube-watches.ts';
import type { IncidentIndex } from '../../adapters/jobstore/incident-index.ts';
import { FleetSnapshots } from '../console/fleet-snapshot.ts';
import { CachedRead } from '../console/cached-read.ts';
import { findStorms } from '../console/storms.ts';
import { Breakers, type BreakerCaps } from '../../adapters/controls/breakers.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import type { ControlRelay } from './control-relay.ts';
import { fleetRoutes } from './routes/fleet.ts';
import type { ConnectionState } from '../../adapters/redis/redis-connections.ts';
import type { ReplicaAckStatus } from '../../adapters/redis/replica-ack.ts';

export interface AppDeps extends WebhookDeps {
  redis: RedisConnection;
  prefix: string;
  /** The webhook senders' tokens (VOLUME_MEDIC_TOKEN): they open the webhook routes only. */
  tokens: readonly string[];
  /** Operator identity and RBAC for every other /v1 route and the dashboard. */
  operatorAuth: OperatorAuth;
  /** Failed authentications per client address (webhook token, operator token, dashboard sign-in). */
  authLimiter: FailedAuthLimiter;
  /** TRUSTED_PROXY_CIDRS: whose X-Forwarded-For/-Proto express believes (req.ip, req.secure). */
  trustedProxyCidrs: readonly string[];
  bodyLimit: number;
  reader: JobReader;
  /** Does this replica export the fleet-wide series on /metrics (src/control/fleet/fleet-exporter.ts)? Default: yes. */
  fleetMetrics?: () => boolean;
  /** The process's supervised Redis connections, for /readyz, /healthz and /metrics. */
  connections?: () => ConnectionState[];
  /** REDIS_ACK_REPLICAS > 0: the replica acknowledgement's last outcome, for /readyz and /metrics. */
  replicaAck?: () => ReplicaAckStatus;
  /** POST /v1/enrol (ENROL_NODE_AGENTS / ENROL_CLUSTER_WORKERS); absent: 404. */
  enrolment?: Enrolment;
  /** POST /v1/nodes/:node/revoke (with enrolment of node agents); absent: 404 with why. */
  revocation?: NodeRevocation;
  /** POST /v1/agents/breakers: enrolled agents' breaker slots (with enrolment); absent: 404. */
  agentBreakers?: { roots: Keyring; caps: BreakerCaps; relay?: ControlRelay };
  /** NODE_REDIS_BUDGET_MIB with per-node users: GET /v1/redis-budget, POST /v1/redis-budget/release; absent: 404. */
  redisBudget?: { port: RedisBudgetPort; budgetBytes: number };
  /** The Kubernetes watches' state, when KUBE_WATCH is on. */
  kubeState?: () => KubeWatchesState | undefined;
  /** Operator controls: /v1 control routes, the /ui dashboard, and pause/breakers in /readyz and /metrics. */
  controls?: {
    actions: OperatorActions;
    jobs: JobStore;
    board: (basePath: string) => QueueBoard;
    uiSessionTtlSeconds: number;
    incidents: IncidentIndex;
    retries?: JobRetry;
    events?: JobEventReader;
    /** Where the jobs' VolumeRemediation records are (src/control/records/): a job's page and `show` name its record. */
    recordsNamespace?: string;
  };
}

const SOURCE_OF: Record<string, string> = { '/v1/alertmanager': 'alertmanager', '/v1/events': 'events', '/v1/npd': 'npd' };

// long because: the HTTP app's composition root: one line per middleware and route module, in the order requests meet them
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // No ETag: nothing here is cached by clients, and hashing every webhook answer costs the hot path.
  app.set('etag', false);
  // req.ip and req.secure follow X-Forwarded-For/-Proto only from these peers (none: never).
  app.set('trust proxy', deps.trustedProxyCidrs.length ? [...deps.trustedProxyCidrs] : false);
  // Auth before the body is read: an unauthenticated sender does not get us to parse 1 MiB.
  const auth = bearerAuth(deps.tokens, deps.authLimiter, (req) => {
    const source = SOURCE_OF[req.originalUrl.split('?')[0] ?? ''];
    if (source) deps.metrics.webhooks.inc({ source, outcome: 'unauthorized' });
  });
  // Senders differ in Content-Type (some send none); every body here is JSON.
  const body = jsonBody(deps.bodyLimit);
  // The webhook routes first, with auth and body reading as route middleware: every alert walks
  // the router from the top, and a route match is cheaper than prefix middleware. The
  // dashboard and probes are rare. (Neither lives under /v1, so the order changes no match.)
  // Before any authentication, whatever the mode: no write a browser marks as cross-site, no
  // body that is not JSON (src/control/http/cross-site.ts).
  app.use(webhookRoutes(deps, [refuseCrossSiteWrites({ allowUntyped: true }), auth, body]));
  // Agents trade their pod's token for their queue's keys: not an operator route.
  app.use(
    enrolRoutes({ enrolment: deps.enrolment, limiter: deps.authLimiter, counter: deps.metrics.enrolments, log: deps.log }, [refuseCrossSiteWrites(), body]),
  );
  // Enrolled agents take breaker slots here, sealed with their node's work key: not an operator route.
  if (deps.agentBreakers)
    app.use(
      breakerSlotRoutes({ redis: deps.redis, prefix: deps.prefix, ...deps.agentBreakers, limiter: deps.authLimiter, log: deps.log }, [
        refuseCrossSiteWrites(),
        body,
      ]),
    );
  // Every other /v1 route: an operator identity with the route's RBAC verb (src/control/auth/permissions.ts).
  app.use('/v1', refuseCrossSiteWrites(), operatorGate(deps.operatorAuth), body);
  app.use(
    healthRoutes({
      redis: deps.redis,
      prefix: deps.prefix,
      registry: deps.metrics.registry,
      kubeState: deps.kubeState,
      controls: deps.controls?.actions.store,
      authenticated: deps.tokens.length > 0,
      operators: deps.operatorAuth,
      fleet: deps.fleetMetrics,
      connections: deps.connections,
      replicaAck: deps.replicaAck,
    }),
  );
  // The dashboard has its own sign-in and sessions (a browser cannot send a bearer header): see routes/ui-auth.ts.
  // One scan of every queue shared by the console's pages and their JSON (src/control/console/fleet-snapshot.ts).
  const fleet = deps.controls ? new FleetSnapshots(deps.redis, deps.prefix) : undefined;
  if (deps.controls && fleet) {
    const { incidents } = deps.controls;
    // Every 5 s at most, and at least 10x the read (10,000 index entries and their jobs' states).
    const storms = new CachedRead(() => findStorms(incidents, deps.redis, deps.prefix), { ttlMs: 5_000 });
    app.use(
      uiRoutes({
        redis: deps.redis,
        prefix: deps.prefix,
        auth: deps.operatorAuth,
        jobs: deps.controls.jobs,
        board: deps.controls.board,
        controls: deps.controls.actions,
        incidents,
        fleet,
        storms,
        ...(deps.controls.retries ? { retries: deps.controls.retries } : {}),
        ...(deps.controls.events ? { events: deps.controls.events } : {}),
        ...(deps.controls.recordsNamespace ? { recordsNamespace: deps.controls.recordsNamespace } : {}),
        sessions: new SessionStore(deps.redis, deps.prefix, deps.controls.uiSessionTtlSeconds),
      }),
    );
  }
  if (deps.controls) app.use(jobRoutes({ reader: deps.reader, incidents: deps.controls.incidents, jobs: deps.controls.jobs }));
  app.use(explainRoutes(deps));
  if (deps.controls) app.use(controlRoutes(deps.controls.actions, deps.controls.retries));
  if (deps.controls && fleet) app.use(fleetRoutes({ fleet, store: deps.controls.actions.store, breakers: new Breakers(deps.redis, deps.prefix) }));
  if (deps.controls)
    app.use(
      incidentRoutes({
        redis: deps.redis,
        prefix: deps.prefix,
        jobs: deps.controls.jobs,
        controls: deps.controls.actions,
        incidents: deps.controls.incidents,
        ...(deps.controls.events ? { events: deps.controls.events } : {}),
        ...(deps.controls.recordsNamespace ? { recordsNamespace: deps.controls.recordsNamespace } : {}),
      }),
    );
  app.use(nodeCredentialRoutes(deps.revocation));
  if (deps.redisBudget) app.use(redisBudgetRoutes(deps.redisBudget.port, deps.redisBudget.budgetBytes));
  if (deps.controls)
    app.use(
      placeholderRoutes({
        redis: deps.redis,
        prefix: deps.prefix,
        dispatcher: deps.dispatcher,
        audit: deps.controls.actions.store,
        retryAfterSeconds: deps.retryAfterSeconds,
      }),
    );
  if (deps.controls) app.use(uninstallRoutes({ redis: deps.redis, prefix: deps.prefix, audit: deps.controls.actions.store }));
  app.use((_req, res) => res.status(404).json({ error: 'no such route' }));
  app.use(
    errorHandler(deps.log, (path, outcome) => {
      const source = SOURCE_OF[path];
      if (source) deps.metrics.webhooks.inc({ source, outcome });
    }),
  );
  return app;
}
