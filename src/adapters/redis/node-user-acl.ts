import { isNodeName } from '../../core/catalogue/names.ts';
import { nodeQueueName } from '../../core/catalogue/queues.ts';
import { readOnlyRules } from '../../core/redis-budget/restriction.ts';

// The rules of the per-node Redis ACL users (node-redis-users.ts applies them): which user a node
// has, what it may run and touch, and which ACL commands bring a server in line with the registry.
// Pure: no I/O, so every rule is unit-tested directly (test/unit/adapters/redis/node-redis-users.test.ts).

/**
 * The commands of a node agent's user: exactly the shared `volume-medic-node-agent` user's of
 * deploy/charts/volume-medic/files/users.acl.template (test/unit/adapters/redis/node-redis-users.test.ts
 * holds the two equal), where that file explains each.
 */
export const NODE_AGENT_COMMANDS: readonly string[] = [
  'ping',
  'quit',
  'info',
  'client|setname',
  // Not eval: a node runs the scripts the receiver loaded (src/adapters/redis/lua-script.ts).
  'evalsha',
  'multi',
  'exec',
  'discard',
  'get',
  'set',
  'incr',
  'del',
  'exists',
  'type',
  'rename',
  'pexpire',
  'pttl',
  'persist',
  'hset',
  'hsetnx',
  'hget',
  'hmget',
  'hmset',
  'hgetall',
  'hdel',
  'hincrby',
  'hlen',
  'hexists',
  'hscan',
  'lpush',
  'rpush',
  'lpop',
  'rpop',
  'lrange',
  'ltrim',
  'lrem',
  'llen',
  'lindex',
  'lset',
  'lpos',
  'rpoplpush',
  'sadd',
  'srem',
  'smembers',
  'scard',
  'sismember',
  'sscan',
  'zadd',
  'zrem',
  'zscore',
  'zcard',
  'zcount',
  'zrange',
  'zrevrange',
  'zrangebyscore',
  'zrevrangebyscore',
  'zremrangebyscore',
  'zremrangebyrank',
  'zpopmin',
  'xadd',
  'xtrim',
  'bzpopmin',
];

/**
 * Added to every per-node user (not in the template): ioredis' Cluster client asks a node for the
 * slot map (CLUSTER SLOTS) and checks CLUSTER INFO before it is ready, so without them a node
 * agent's user could not even connect to a Cluster. Both only read the topology; on a server
 * that is not in a Cluster they answer an error. The template's shared users lack them, which
 * is fine for the bundled single Redis it is written for.
 */
export const CLUSTER_DISCOVERY_COMMANDS: readonly string[] = ['cluster|slots', 'cluster|info'];

/**
 * The keys outside its own queue a node's own user may touch: read-only (%R~), the modes and
 * pauses. Its job statistics are its queue's own (src/adapters/stats/job-stats.ts queueStatsKey), and
 * the receiver takes its breaker slots (src/core/controls/breaker-wire.ts): a node's password can
 * neither lower the fleet's counts nor trip or clear a breaker.
 * Narrower than the template's shared node-agent user, which keeps the old shared approval,
 * parked and audit keys and the queue registry for agents not yet upgraded: an enrolled agent
 * writes its approval requests, parked jobs and audit entries under its own queue
 * (src/core/controls/redis-keys.ts queueControlKeys) and the receiver records its queue at enrolment.
 */
const nodeAgentSharedKeys = (prefix: string): string[] => [`%R~${prefix}:vm:ctl:modes`, `%R~${prefix}:vm:ctl:pause`];

// Every user this module manages starts with this. The '.' cannot be confused with the shared
// user `volume-medic-node-agent` (a node named `agent` is `volume-medic-node.agent`), and every
// character of a node name and of this prefix is unreserved in a URL's userinfo, so the name
// goes into REDIS_URL without percent-encoding (Redis itself only refuses spaces in user names).
const USER_PREFIX = 'volume-medic-node.';
const PREFIX = /^[A-Za-z0-9_-]{1,64}$/; // as QUEUE_PREFIX (scripts/deploy/redis-acl.ts)
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Whether `prefix` (QUEUE_PREFIX) can go into an ACL key pattern as it is. */
export const isAclPrefix = (prefix: string): boolean => PREFIX.test(prefix);

/** Whether `sha` is a password hash as the registry holds them: SHA-256, 64 lowercase hex characters. */
export const isPasswordSha256 = (sha: string): boolean => SHA256_HEX.test(sha);

export const nodeUserName = (node: string): string => `${USER_PREFIX}${checkedNode(node)}`;

/** The node a managed user name stands for, or undefined for any other user. */
export const nodeOfUserName = (user: string): string | undefined =>
  user.startsWith(USER_PREFIX) && isNodeName(user.slice(USER_PREFIX.length)) ? user.slice(USER_PREFIX.length) : undefined;

/** The registry of managed users: node -> SHA-256 (hex) of its password. A hash on the primary. */
export const nodeUsersKey = (prefix: string): string => `${prefix}:vm:acl:nodes`;

export function checkedNode(node: string): string {
  // A node name becomes part of a key pattern: a '*', '?' or '[' would widen it to other nodes,
  // a '}' would end the hash tag early. RFC 1123 subdomains hold none of them.
  if (!isNodeName(node)) throw new Error(`not a node name (RFC 1123 subdomain): ${JSON.stringify(node.slice(0, 80))}`);
  return node;
}

/**
 * The arguments of ACL SETUSER after the user name: a whole definition (`reset` first, so
 * applying it again, or over an older definition, leaves nothing of the old one), the password by
 * hash only, that node's queue (`~<prefix>:vm-node-{<node>}:*`; '{' and '}' are literal in Redis'
 * glob patterns, so it matches no other node's keys), the shared keys, no channels, and the
 * node agent's commands after -@all.
 */
export function nodeUserRules(prefix: string, node: string, passwordSha256Hex: string): string[] {
  if (!PREFIX.test(prefix)) throw new Error(`QUEUE_PREFIX "${prefix}" cannot be an ACL key pattern: letters, digits, _ and - only`);
  if (!SHA256_HEX.test(passwordSha256Hex)) throw new Error('the password hash must be 64 lowercase hex characters (SHA-256)');
  return [
    'reset',
    'on',
    `#${passwordSha256Hex}`,
    'resetchannels',
    `~${prefix}:${nodeQueueName(checkedNode(node))}:*`,
    ...nodeAgentSharedKeys(prefix),
    '-@all',
    ...[...NODE_AGENT_COMMANDS, ...CLUSTER_DISCOVERY_COMMANDS].map((c) => `+${c}`),
  ];
}

/** One change of a node's user: applied (`sha`, the password's hash) or removed (no `sha`). */
export interface NodeUserChange {
  node: string;
  /** undefined: remove. */
  sha?: string | undefined;
  /** Over its memory budget (src/core/redis-budget/restriction.ts): applied read-only, its connections closed. */
  readOnly?: boolean;
}

/** The arguments after `ACL` of one command. */
type AclCommand = string[];

/**
 * The ACL commands of a batch on one server: `pipeline` in one pipeline, then each of `swaps` as
 * a MULTI of its own. A restricted user is deleted (Redis closes its connections: a huge write
 * still arriving goes with its buffer) and made again read-only, at once: no WRONGPASS between.
 */
export function aclCommands(prefix: string, batch: readonly NodeUserChange[]): { pipeline: AclCommand[]; swaps: AclCommand[][] } {
  const pipeline: AclCommand[] = [];
  const swaps: AclCommand[][] = [];
  for (const c of batch) {
    const user = nodeUserName(c.node);
    if (!c.sha) pipeline.push(['DELUSER', user]);
    else if (!c.readOnly) pipeline.push(['SETUSER', user, ...nodeUserRules(prefix, c.node, c.sha)]);
    else
      swaps.push([
        ['DELUSER', user],
        ['SETUSER', user, ...readOnlyRules(nodeUserRules(prefix, c.node, c.sha))],
      ]);
  }
  return { pipeline, swaps };
}

/** The registry as read (node -> password hash), less any entry that is not a node name and a hash. */
export function registryOf(all: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(all).filter(([node, sha]) => isNodeName(node) && SHA256_HEX.test(sha)));
}

/**
 * What brings a server whose users are `users` (ACL USERS) in line with the registry: every
 * registered user it lacks (every registered user when `full`: it may hold an old password or an
 * older release's rules), read-only if restricted, and the managed users the registry no longer has.
 */
export function serverChanges(
  users: readonly string[],
  registry: ReadonlyMap<string, string>,
  restricted: ReadonlySet<string>,
  full: boolean,
): NodeUserChange[] {
  const present = new Set(users.map(nodeOfUserName).filter((n): n is string => n !== undefined));
  const changes: NodeUserChange[] = [];
  for (const [node, sha] of registry) if (full || !present.has(node)) changes.push({ node, sha, ...(restricted.has(node) ? { readOnly: true } : {}) });
  for (const node of present) if (!registry.has(node)) changes.push({ node });
  return changes;
}
