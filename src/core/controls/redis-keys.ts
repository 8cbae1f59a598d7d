// Redis layout of the operator controls (this file is the contract between the receiver, which
// changes controls through the API, and the workers, which read them at job start and before
// each step). Everything lives under the installation's QUEUE_PREFIX.
//
// Redis Cluster: every script and transaction here touches one slot. The controls are one key
// each (a hash of all nodes' modes, of all pauses, ...), read and written one key at a time.
// The breakers are the one place where a script spans keys (a destructive step takes a slot in
// its node's window and in the cluster's at once, and checks the trips): all breaker keys share
// the hash tag `{breakers}`, so they sit in one slot by design. Their traffic is one script per
// destructive step and per job start, small enough for one master. They stay under
// `<prefix>:vm:ctl:breaker:` (key patterns such as the node agents' ACL hold).

/** Hash tag of every breaker key (shared by installations on one Cluster: their keys differ by prefix). */
const BREAKERS_TAG = '{breakers}';

export const controlKeys = (prefix: string) => ({
  /** hash `runbook/<name>` | `node/<name>` -> ModeOverride JSON */
  modes: `${prefix}:vm:ctl:modes`,
  /** hash `cluster` | `node/<name>` -> PauseRecord JSON */
  pause: `${prefix}:vm:ctl:pause`,
  /**
   * list of AuditEntry JSON, newest first, capped: the fleet trail, the receiver's own entries
   * (modes, pauses, decisions, retries, forced releases). Workers write their queue's
   * (queueControlKeys); readers merge both. Entries older agents wrote here stay readable.
   */
  audit: `${prefix}:vm:ctl:audit`,
  /**
   * Transition only (read, never written by this release): where agents before per-queue keys
   * parked jobs (hash jobId -> ParkedJob JSON) and asked for approval (ApprovalRecord JSON).
   * Readers still merge them so a rolling upgrade loses no pending approval; see
   * src/core/controls/README.md ("Where a worker writes").
   */
  legacyParked: `${prefix}:vm:ctl:parked`,
  legacyApproval: (jobId: string) => `${prefix}:vm:ctl:approval:${jobId}`,
  /**
   * hash `<kind>/<field>` -> the generation of the last record the API wrote there (the writer's
   * clock in ms, forced above the last one), so the next one is newer whatever the writers'
   * clocks (readers refuse older generations as replays).
   */
  sealedAt: `${prefix}:vm:ctl:sealed-at`,
  /** hash `cluster` | `storm` | `node/<name>` -> TripRecord JSON */
  tripped: `${prefix}:vm:ctl:breaker:${BREAKERS_TAG}:tripped`,
  /** sorted sets of destructive steps (member: job/step/time, score: ms) in the last hour */
  destructiveCluster: `${prefix}:vm:ctl:breaker:${BREAKERS_TAG}:destructive:cluster`,
  destructiveNode: (node: string) => `${prefix}:vm:ctl:breaker:${BREAKERS_TAG}:destructive:node/${node}`,
  /** sorted set member: node, score: its last destructive step (ms): the nodes with a window, without a SCAN */
  destructiveNodes: `${prefix}:vm:ctl:breaker:${BREAKERS_TAG}:destructive:nodes`,
  /** sorted set member: node, score: last job start (ms) */
  storm: `${prefix}:vm:ctl:breaker:${BREAKERS_TAG}:storm`,
  /** hash node -> the source of the last job it started in the storm window (who sent the flood) */
  stormSources: `${prefix}:vm:ctl:breaker:${BREAKERS_TAG}:storm:sources`,
  /** hash node -> `{ record: TaintSighting, seal? }` JSON: the out-of-service taint's first sight (src/adapters/controls/taint-sightings.ts) */
  taintSightings: `${prefix}:vm:ctl:oos-first-sight`,
});
export type ControlKeys = ReturnType<typeof controlKeys>;

/**
 * What a worker writes about its own jobs, under its own queue's namespace and hash tag
 * (`<prefix>:vm-node-{<node>}:vm:...`), so a node's Redis user whose keys are
 * `~<prefix>:vm-node-{<node>}:*` can write these and nothing of another node's. The
 * `vm:` segment keeps them apart from BullMQ's keys: a job id cannot contain ':', so
 * `<prefix>:<queue>:<jobId>[:suffix]` never reads `...:vm:approval:...`, `...:vm:parked` or
 * `...:vm:audit` (a job id `vm` gives only BullMQ's own suffixes: `:lock`, `:logs`, ...).
 * One slot per queue on a Cluster (the queue's hash tag), like its BullMQ keys.
 */
export const queueControlKeys = (prefix: string, queue: string) => ({
  /** string: ApprovalRecord JSON of one job: the worker's request, the API's sealed decision over it */
  approval: (jobId: string) => `${prefix}:${queue}:vm:approval:${jobId}`,
  /** hash jobId -> ParkedJob JSON: this queue's jobs waiting on a pause, an approval or a breaker */
  parked: `${prefix}:${queue}:vm:parked`,
  /** list of AuditEntry JSON, newest first, capped: what this queue's worker did and refused */
  audit: `${prefix}:${queue}:vm:audit`,
  /**
   * hash `mode|<field>` / `pause|<field>` -> the shared record's text, `gen|...` -> its generation,
   * `synced` -> the last full copy (ms): the receiver's copy of what this node's agent reads at a
   * job's start, in its queue's slot (src/adapters/controls/control-mirrors.ts). Written by the
   * receiver only; the node's own user may read it.
   */
  controls: `${prefix}:${queue}:vm:controls`,
});
