import { z } from 'zod';
import { boundedRaw } from '../../core/catalogue/evidence.ts';
import type { Ignored, NodeRecoveredSignal, SourceResult } from '../../core/signals/index.ts';

// Alertmanager webhook payload, version 4
// (https://prometheus.io/docs/alerting/latest/configuration/#webhook_config).
// Alertmanager only retries 5xx, so a payload it sends must never be refused for a field we do
// not use: extra fields pass, and only the fields we read are required.

const LabelSet = z.record(z.string(), z.string());

const AlertmanagerAlert = z.object({
  status: z.enum(['firing', 'resolved']),
  labels: LabelSet,
  annotations: LabelSet.default({}),
  startsAt: z.string(),
  endsAt: z.string().optional(),
  generatorURL: z.string().optional(),
  fingerprint: z.string().min(1),
});

export const AlertmanagerPayload = z.object({
  version: z.string().optional(),
  groupKey: z.string().optional(),
  truncatedAlerts: z.number().int().nonnegative().optional(),
  status: z.enum(['firing', 'resolved']).optional(),
  receiver: z.string().optional(),
  groupLabels: LabelSet.optional(),
  commonLabels: LabelSet.optional(),
  commonAnnotations: LabelSet.optional(),
  externalURL: z.string().optional(),
  alerts: z.array(AlertmanagerAlert).max(10_000),
});
export type AlertmanagerPayload = z.infer<typeof AlertmanagerPayload>;

export interface AlertmanagerOptions {
  /** Alert names whose resolution means "this node is back" (default: KubeNodeNotReady, KubeNodeUnreachable). */
  nodeRecoveryAlerts: ReadonlySet<string>;
}

/** Labels that name a node, in order of preference (kube-state-metrics uses `node`). */
const NODE_LABELS = ['node', 'kubernetes_node', 'nodename'] as const;

function nodeLabel(labels: Record<string, string>): string | undefined {
  for (const l of NODE_LABELS) {
    const v = labels[l];
    if (v !== undefined && v !== '') return v;
  }
  return undefined;
}

export function alertmanagerSignals(payload: AlertmanagerPayload, opts: AlertmanagerOptions): SourceResult<NodeRecoveredSignal> {
  const signals: NodeRecoveredSignal[] = [];
  const ignored: Ignored[] = [];
  payload.alerts.forEach((alert, index) => {
    const name = alert.labels['alertname'] ?? '';
    if (!opts.nodeRecoveryAlerts.has(name)) {
      ignored.push({
        reason: 'alert-not-relevant',
        detail: `alert ${name || '(no alertname)'} is not a node-recovery alert`,
        source: 'alertmanager',
        index,
      });
      return;
    }
    const node = nodeLabel(alert.labels);
    if (node === undefined) {
      ignored.push({
        reason: 'alert-names-no-node',
        detail: `alert ${name} has none of the labels ${NODE_LABELS.join(', ')}`,
        source: 'alertmanager',
        index,
      });
      return;
    }
    if (alert.status === 'firing') {
      // The node is still down: there is nothing to clean until it is back.
      ignored.push({
        reason: 'alert-still-firing',
        detail: `${name} for node ${node} is firing; acting when it resolves`,
        source: 'alertmanager',
        index,
      });
      return;
    }
    signals.push({
      kind: 'node-recovered',
      version: 1,
      node,
      // The same alert re-sent (repeat_interval, an HA pair) keeps fingerprint and startsAt.
      identity: ['alert', alert.fingerprint, alert.startsAt],
      evidence: { source: 'alertmanager', summary: `${name} resolved for node ${node}`, raw: boundedRaw(alert) },
    });
  });
  return { signals, ignored };
}
