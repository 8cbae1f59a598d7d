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
export const BREAKERS_TAG = '{breakers}';

export const controlKeys = (prefix: string) => ({
  /** hash `runbook/<name>` | `node/<name>` -> ModeOverride JSON */
  modes: `${prefix}:vm:ctl:modes`,
  /** hash `cluster` | `node/<name>` -> PauseRecord JSON */
  pause: `${prefix}:vm:ctl:pause`,
  /** list of AuditEntry JSON, newest first, capped */
  audit: `${prefix}:vm:ctl:audit`,
  /** hash jobId -> ParkedJob JSON: jobs waiting on a pause, an approval or a breaker */
  parked: `${prefix}:vm:ctl:parked`,
  /** string: ApprovalRecord JSON of one job */
  approval: (jobId: string) => `${prefix}:vm:ctl:approval:${jobId}`,
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
});
export type ControlKeys = ReturnType<typeof controlKeys>;
