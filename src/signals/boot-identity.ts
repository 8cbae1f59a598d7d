import type { NodeRecoveredSignal } from './signal.ts';

/**
 * A node recovery seen without a boot id (kubelet's `NodeReady` event) takes the boot identity
 * the Node watch and kubelet's `Rebooted` event use, when the node's boot id is known, so the
 * same reboot is one job whichever way it arrived. Recoveries with an identity of their own
 * (an alert's fingerprint + startsAt, a boot already named) are left as they are.
 */
export function withBootIdentity(s: NodeRecoveredSignal, bootId: string | undefined): NodeRecoveredSignal {
  if (s.bootId || s.identity[0] !== 'event' || !bootId) return s;
  return { ...s, bootId, identity: ['boot', s.node, bootId] };
}
