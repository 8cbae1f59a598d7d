// What an operator may do, as Kubernetes RBAC sees it: a verb on a resource of the API group
// `volume-medic.io`. Nothing in the cluster serves that group; SubjectAccessReview only asks RBAC
// (or whatever authorizer the cluster runs) whether a ClusterRole grants the verb, so
// `kubectl create clusterrolebinding ... --clusterrole volume-medic-approver` decides who may
// approve. docs/operator-identity.md's ClusterRole examples are written from OPERATOR_PERMISSIONS.

export const OPERATOR_API_GROUP = 'volume-medic.io';

export const OPERATOR_PERMISSIONS = {
  jobs: {
    list: 'list jobs and the jobs waiting for approval, the fleet overview and the summary; open the /ui dashboard (GET /v1/jobs, /v1/approvals, /v1/fleet, /v1/summary, /ui/...)',
    get: 'read one job, its approval request and its incident view (GET /v1/jobs/:id, /v1/jobs/:id/approval, /v1/jobs/:id/incident)',
    explain: 'ask what a webhook payload would do, storing nothing (POST /v1/explain)',
    approve: "approve the waiting high-risk steps of a job (POST /v1/jobs/:id/approve, the dashboard's Approve)",
    reject: "refuse them (POST /v1/jobs/:id/reject, the dashboard's Reject)",
    retry: "run a failed job again as a new job the receiver seals afresh (POST /v1/jobs/:id/retry, the dashboard's Retry)",
  },
  controls: {
    get: 'read modes, pauses, breakers, parked jobs, the audit trail and the nodes restricted for their Redis memory (GET /v1/controls, /v1/controls/audit, /v1/breakers, /v1/redis-budget)',
  },
  modes: {
    update: "set or clear a runbook's or a node's mode, enforce included (POST /v1/modes)",
  },
  pauses: {
    create: "pause the cluster, a node or a runbook (POST /v1/pause, the dashboard's Pause)",
    delete: 'resume it (POST /v1/resume)',
  },
  breakers: {
    reset:
      'close a tripped blast-radius breaker (POST /v1/breakers/reset); let a node restricted for going over its Redis memory budget write again (POST /v1/redis-budget/release)',
  },
  placeholders: {
    list: "list the Local PV placeholders the node agents report attached (GET /v1/placeholders; the chart's pre-delete check asks it)",
    release:
      'ask for the release of a Local PV placeholder, checked (POST /v1/placeholders/release-if-back: the agent verifies the disk is back) or forced without the disk check (POST /v1/placeholders/release)',
  },
  uninstall: {
    arm: "mark every node queue for an uninstall, so node agents with nodeAgent.removeHostState remove their host state when they stop (POST /v1/uninstall/arm; the chart's pre-delete check)",
  },
  nodes: {
    revoke: "revoke a node's credentials: its Redis password and work keys die, its agent enrols again for new ones (POST /v1/nodes/:node/revoke)",
  },
} as const;

export type OperatorResource = keyof typeof OPERATOR_PERMISSIONS;
export type Permission = {
  [R in OperatorResource]: { resource: R; verb: keyof (typeof OPERATOR_PERMISSIONS)[R] & string };
}[OperatorResource];

export interface OperatorRoute {
  method: 'GET' | 'POST';
  /** Express-style path; `:name` matches one path segment. */
  path: string;
  permission: Permission;
}

const p = <R extends OperatorResource>(resource: R, verb: keyof (typeof OPERATOR_PERMISSIONS)[R] & string): Permission => ({ resource, verb }) as Permission;

/**
 * Every /v1 route other than the three webhooks, with the permission it needs. The /v1 gate
 * (src/control/http/operator-gate.ts) answers 404 for a route missing here, so a route added to a router
 * without its permission cannot be reached at all (fail closed).
 */
export const OPERATOR_ROUTES: readonly OperatorRoute[] = [
  { method: 'GET', path: '/v1/jobs', permission: p('jobs', 'list') },
  { method: 'GET', path: '/v1/approvals', permission: p('jobs', 'list') },
  { method: 'GET', path: '/v1/fleet', permission: p('jobs', 'list') },
  { method: 'GET', path: '/v1/summary', permission: p('jobs', 'list') },
  { method: 'GET', path: '/v1/jobs/:id', permission: p('jobs', 'get') },
  { method: 'GET', path: '/v1/jobs/:id/approval', permission: p('jobs', 'get') },
  { method: 'GET', path: '/v1/jobs/:id/incident', permission: p('jobs', 'get') },
  { method: 'POST', path: '/v1/jobs/:id/approve', permission: p('jobs', 'approve') },
  { method: 'POST', path: '/v1/jobs/:id/reject', permission: p('jobs', 'reject') },
  { method: 'POST', path: '/v1/jobs/:id/retry', permission: p('jobs', 'retry') },
  { method: 'POST', path: '/v1/explain', permission: p('jobs', 'explain') },
  { method: 'GET', path: '/v1/controls', permission: p('controls', 'get') },
  { method: 'GET', path: '/v1/controls/audit', permission: p('controls', 'get') },
  { method: 'GET', path: '/v1/breakers', permission: p('controls', 'get') },
  { method: 'POST', path: '/v1/modes', permission: p('modes', 'update') },
  { method: 'POST', path: '/v1/pause', permission: p('pauses', 'create') },
  { method: 'POST', path: '/v1/resume', permission: p('pauses', 'delete') },
  { method: 'POST', path: '/v1/breakers/reset', permission: p('breakers', 'reset') },
  { method: 'GET', path: '/v1/redis-budget', permission: p('controls', 'get') },
  { method: 'POST', path: '/v1/redis-budget/release', permission: p('breakers', 'reset') },
  { method: 'POST', path: '/v1/placeholders/release', permission: p('placeholders', 'release') },
  { method: 'GET', path: '/v1/placeholders', permission: p('placeholders', 'list') },
  { method: 'POST', path: '/v1/placeholders/release-if-back', permission: p('placeholders', 'release') },
  { method: 'POST', path: '/v1/nodes/:node/revoke', permission: p('nodes', 'revoke') },
  { method: 'POST', path: '/v1/uninstall/arm', permission: p('uninstall', 'arm') },
];

/** The routes the webhook token opens, and nothing else does. */
export const WEBHOOK_PATHS: readonly string[] = ['/v1/alertmanager', '/v1/events', '/v1/npd'];

const compiled = OPERATOR_ROUTES.map((r) => ({
  ...r,
  re: new RegExp(
    `^${r.path
      .split('/')
      .map((s) => (s.startsWith(':') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/')}/?$`,
  ),
}));

/** The permission a request needs; undefined when no operator route matches (answered 404). */
export function permissionFor(method: string, path: string): Permission | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  return compiled.find((r) => r.method === m && r.re.test(path))?.permission;
}

export const describePermission = (p: Permission): string => `${p.verb} ${p.resource}.${OPERATOR_API_GROUP}`;
