// kubelet's orphaned-pod line (all three generations): parsed in src/core so the receiver's
// triage (NPD's Event) and this runbook read it the same way.
export { parseOrphanLine } from '../../../src/core/signals/kubelet-orphan-line.ts';
