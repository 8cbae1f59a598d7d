import type { SignalSource } from '../catalogue/evidence.ts';

// Every payload (or part of one) that does not become a job says why. The reason is a closed set
// because it is also a Prometheus label; `detail` carries the specifics for humans.

const IGNORE_REASONS = [
  'alert-not-relevant',
  'alert-still-firing',
  'alert-names-no-node',
  'event-reason-not-relevant',
  'event-message-not-recognised',
  'event-names-no-node',
  'event-reporter-not-trusted',
  'event-wrong-object-kind',
  'event-namespace-not-trusted',
  'pod-volume-unconfirmed',
  'condition-not-relevant',
  'invalid-node-name',
  'node-status-disagrees',
  'invalid-name',
  'pv-unknown',
  'pv-not-local-block-device',
  'path-not-a-device-link',
  'restore-names-no-device',
  'duplicate-in-payload',
  'agent-too-old',
] as const;
export type IgnoreReason = (typeof IGNORE_REASONS)[number];

export interface Ignored {
  reason: IgnoreReason;
  detail: string;
  source: SignalSource;
  /** Position of the item inside the payload (alert index, event index), when there were several. */
  index?: number;
}

export interface SourceResult<S> {
  signals: S[];
  ignored: Ignored[];
}
