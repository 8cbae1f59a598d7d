// Redis layout of the operator controls (this file is the contract between the receiver, which
// changes controls through the API, and the workers, which read them at job start and before
// each step). Everything lives under the installation's QUEUE_PREFIX.

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
   * hash `<kind>/<field>` -> the seal time (epoch ms) of the last record the API wrote there, so
   * the next one seals later whatever the writers' clocks (readers refuse older seals as replays).
   */
  sealedAt: `${prefix}:vm:ctl:sealed-at`,
  /** hash `cluster` | `storm` | `node/<name>` -> TripRecord JSON */
  tripped: `${prefix}:vm:ctl:breaker:tripped`,
  /** sorted sets of destructive steps (member: job/step/time, score: ms) in the last hour */
  destructiveCluster: `${prefix}:vm:ctl:breaker:destructive:cluster`,
  destructiveNode: (node: string) => `${prefix}:vm:ctl:breaker:destructive:node/${node}`,
  /** sorted set member: node, score: last job start (ms) */
  storm: `${prefix}:vm:ctl:breaker:storm`,
});
export type ControlKeys = ReturnType<typeof controlKeys>;
