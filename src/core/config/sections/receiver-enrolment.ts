import { z } from '../../zod.ts';
import { list } from '../env-text.ts';
import { section, setting } from '../setting.ts';
import { Count, Flag, NonEmpty, ServiceAccounts } from '../types.ts';

const RECEIVER = ['receiver'] as const;

export const receiverEnrolment = section({
  title: 'Receiver: enrolment and node Redis users',
  doc: 'Which pods may enrol as agents (POST /v1/enrol), and the Redis user and budget each enrolled node gets.',
  settings: {
    enrolAudience: setting({
      env: 'ENROL_AUDIENCE',
      readers: RECEIVER,
      type: () => z._default(NonEmpty, 'volume-medic'),
      doc: 'The audience enrolment tokens are issued for and checked against (TokenReview).',
    }),
    enrolNodeAgents: setting({
      env: 'ENROL_NODE_AGENTS',
      readers: RECEIVER,
      type: () => z._default(ServiceAccounts, []),
      read: list,
      doc: "The service accounts (`<namespace>/<name>`) whose pods may enrol as a node's agent, for the node the pod runs on only. Unset, with ENROL_CLUSTER_WORKERS unset too: enrolment is off (POST /v1/enrol answers 404).",
    }),
    enrolClusterWorkers: setting({
      env: 'ENROL_CLUSTER_WORKERS',
      readers: RECEIVER,
      type: () => z._default(ServiceAccounts, []),
      read: list,
      doc: 'The service accounts (`<namespace>/<name>`) whose pods may enrol as the cluster worker.',
    }),
    redisNodeUsers: setting({
      env: 'REDIS_NODE_USERS',
      readers: RECEIVER,
      type: () => z._default(Flag, false),
      doc: "With enrolment, each enrolled node agent gets a Redis user of its own, allowed its own queue's keys only, created on every server of the topology (Redis replicates no ACL) and kept there (src/adapters/redis/node-redis-users.ts); the receiver's Redis user then needs `+acl|setuser +acl|deluser +acl|users`. A node's user is removed when its Node object is deleted (KUBE_WATCH). False: agents use the Redis user they are given.",
    }),
    nodeRedisBudgetMib: setting({
      env: 'NODE_REDIS_BUDGET_MIB',
      readers: RECEIVER,
      type: () => z._default(z.coerce.number().check(z.gte(0), z.lte(1_048_576)), 32),
      doc: "With REDIS_NODE_USERS: the most a node's own keys (`<prefix>:vm-node-{<node>}:*`) may hold in Redis, in MiB, by MEMORY USAGE. The receiver that exports the fleet-wide series reads INFO memory every second and counts every node's keys when a primary is at 80% of its maxmemory, and every NODE_REDIS_BUDGET_SCAN_SECONDS anyway. A node over it gets its Redis user back read-only (its connections closed), loses its own keys (the bulk of what it wrote first) until it holds its budget again, and stays so until an operator releases it (POST /v1/redis-budget/release); alert VolumeMedicNodeRedisOverBudget. A busy node holds up to ~10 MiB (20 jobs of 8 dead maps and a full audit list; docs/decisions/0006). Keep it well under half of maxmemory. 0: off.",
    }),
    nodeRedisBudgetScanSeconds: setting({
      env: 'NODE_REDIS_BUDGET_SCAN_SECONDS',
      readers: RECEIVER,
      type: () => z._default(Count(1), 300),
      doc: "How often every node's keys are counted when Redis is not under pressure.",
    }),
  },
});
