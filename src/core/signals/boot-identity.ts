import type { NodeRecoveredSignal } from './signal.ts';

/**
 * The identity of a node's outage is the boot the node came back with (status.nodeInfo.bootID).
 * A recovery seen without a boot id (kubelet's `NodeReady` event, a resolved `KubeNodeNotReady`
 * or `KubeNodeUnreachable` alert) takes the node's current boot id when it is known, so the
 * signals of one outage are one job whichever way and in whatever order they arrived: the
 * Node watch and kubelet's `Rebooted` event name the boot themselves.
 *
 * Why the boot and not a time: the two alerts' `startsAt` differ by their `for:` durations and
 * evaluation ticks, the NodeReady event has its own time, and the Ready condition's
 * lastTransitionTime is not yet written when kubelet's `Rebooted` event is sent; the boot id is
 * posted with kubelet's first status after boot, before Ready is True and before either alert
 * can resolve. A second power loss is a new boot, so a new job. An outage without a reboot (a
 * network partition) keeps the boot id: it folds into the job of the same boot while that job
 * is kept (docs/jobs.md, "Idempotency").
 *
 * Left as they are: a boot already named, and a recovery whose node's boot id is unknown (no
 * cluster access): those keep their own identity (alert fingerprint + startsAt, Event uid).
 */
export function withBootIdentity(s: NodeRecoveredSignal, bootId: string | undefined): NodeRecoveredSignal {
  if (s.bootId || !takesBootIdentity(s) || !bootId) return s;
  return { ...s, bootId, identity: ['boot', s.node, bootId] };
}

/** A recovery that names no boot of its own: a NodeReady Event or a resolved node alert. */
export const takesBootIdentity = (s: NodeRecoveredSignal): boolean => !s.bootId && (s.identity[0] === 'event' || s.identity[0] === 'alert');
