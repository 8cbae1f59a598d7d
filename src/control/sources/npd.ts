import { z } from 'zod';
import { boundedRaw } from '../../core/catalogue/evidence.ts';
import type { Ignored, Signal, SourceResult } from '../../core/signals/index.ts';
import { classifyEvent, classifyLocalDiskLost, filesystemReadonly, LOCAL_DISK_LOST } from './classify-event.ts';
import type { EventTrust } from './event-trust.ts';
import { type KubeEvent, KubeEventPayload } from './kube-event.ts';

// node-problem-detector reports in two ways: Events on the Node (involvedObject kind Node,
// source.component = the monitor, e.g. custom-plugin-monitor) and node conditions. A custom
// plugin or an exporter can POST conditions as {node, conditions:[...]}, the shape of
// Node.status.conditions.

const Condition = z
  .object({
    type: z.string().min(1),
    status: z.enum(['True', 'False', 'Unknown']),
    reason: z.string().optional(),
    message: z.string().default(''),
    lastTransitionTime: z.string().optional(),
    lastHeartbeatTime: z.string().optional(),
  })
  .loose();

const NpdConditionsReport = z
  .object({
    node: z.string().min(1),
    conditions: z.array(Condition).min(1).max(100),
  })
  .loose();

/** NPD's permanent kernel-monitor conditions that mean a file system stopped, with the reason that says so. */
const READONLY_CONDITIONS: Readonly<Record<string, string>> = { ReadonlyFilesystem: 'FilesystemIsReadOnly', XfsShutdown: 'XfsHasShutdown' };

export const NpdBody = z.union([NpdConditionsReport, KubeEventPayload, z.array(KubeEventPayload).max(10_000)]);
export type NpdBody = z.infer<typeof NpdBody>;

export function npdSignals(body: NpdBody, trust: EventTrust): SourceResult<Signal> {
  const signals: Signal[] = [];
  const ignored: Ignored[] = [];
  if ('conditions' in body && 'node' in body && Array.isArray(body.conditions)) {
    const report = body as z.infer<typeof NpdConditionsReport>;
    report.conditions.forEach((c, index) => {
      // NPD's kernel monitor: ReadonlyFilesystem=True (FilesystemIsReadOnly), XfsShutdown=True (XfsHasShutdown).
      const readonly = READONLY_CONDITIONS[c.type];
      if (readonly !== undefined && c.status === 'True' && c.reason === readonly) {
        const ev = {
          source: 'npd' as const,
          summary: `${c.type}=${c.status} (${c.reason}) on node ${report.node}: ${c.message}`.slice(0, 500),
          raw: boundedRaw({ node: report.node, condition: c }),
        };
        const r = filesystemReadonly(`condition ${c.type}`, report.node, ['npd-condition', report.node, c.type, c.lastTransitionTime ?? ''], ev);
        if (r.signals) signals.push(...r.signals);
        else ignored.push({ ...r.ignored, index });
        return;
      }
      if (!LOCAL_DISK_LOST.has(c.type) || c.status === 'Unknown') {
        ignored.push({
          reason: 'condition-not-relevant',
          detail: `condition ${c.type}=${c.status} is not one volume-medic acts on`,
          source: 'npd',
          index,
        });
        return;
      }
      const lost = c.status === 'True';
      const ev = {
        source: 'npd' as const,
        summary: `${c.type}=${c.status} on node ${report.node}: ${c.message}`.slice(0, 500),
        raw: boundedRaw({ node: report.node, condition: c }),
      };
      const r = classifyLocalDiskLost(
        `condition ${c.type}`,
        c.message,
        report.node,
        ['npd-condition', report.node, c.type, c.lastTransitionTime ?? ''],
        ev,
        lost,
      );
      if (r.signals) signals.push(...r.signals);
      else ignored.push({ ...r.ignored, index });
    });
    return { signals, ignored };
  }
  const events: KubeEvent[] = Array.isArray(body) ? body : [body as KubeEvent];
  events.forEach((e, index) => {
    const r = classifyEvent(e, 'npd', trust);
    if (r.signals) signals.push(...r.signals);
    else ignored.push({ ...r.ignored, index });
  });
  return { signals, ignored };
}
