import { boundedRaw, type SignalSource } from '../../core/catalogue/evidence.ts';
import type { NodeRecoveredSignal } from '../../core/signals/index.ts';

// When a Node object means "this node is back": its Ready condition went False/Unknown -> True,
// or its boot id changed (it rebooted faster than anyone saw it NotReady). Pure: the watch and
// the reconcile loop feed it plain Node JSON.

export type ReadyStatus = 'True' | 'False' | 'Unknown';

export interface NodeObservation {
  name: string;
  ready?: ReadyStatus;
  bootId?: string;
  /** lastTransitionTime of the Ready condition, ms since epoch. */
  readySince?: number;
  createdAt?: number;
  /** The fields that made the decision, for the job's evidence. */
  raw: unknown;
}

interface PlainNode {
  metadata?: { name?: string; creationTimestamp?: string | Date };
  status?: {
    conditions?: Array<{ type?: string; status?: string; lastTransitionTime?: string | Date; reason?: string; message?: string }>;
    nodeInfo?: { bootID?: string };
  };
}

const ms = (t: string | Date | undefined): number | undefined => {
  if (t === undefined) return undefined;
  const v = new Date(t).getTime();
  return Number.isNaN(v) ? undefined : v;
};

export function observeNode(node: unknown): NodeObservation | undefined {
  const n = node as PlainNode;
  const name = n?.metadata?.name;
  if (!name) return undefined;
  const cond = n.status?.conditions?.find((c) => c.type === 'Ready');
  const ready = cond?.status === 'True' || cond?.status === 'False' || cond?.status === 'Unknown' ? cond.status : undefined;
  const bootId = n.status?.nodeInfo?.bootID || undefined;
  const readySince = ms(cond?.lastTransitionTime);
  const createdAt = ms(n.metadata?.creationTimestamp);
  return {
    name,
    ...(ready ? { ready } : {}),
    ...(bootId ? { bootId } : {}),
    ...(readySince !== undefined ? { readySince } : {}),
    ...(createdAt !== undefined ? { createdAt } : {}),
    raw: { kind: 'Node', metadata: { name }, status: { conditions: cond ? [cond] : [], nodeInfo: { bootID: bootId } } },
  };
}

export type Recovery = { why: 'ready-again'; from: ReadyStatus } | { why: 'rebooted'; previousBootId: string };

/** Remembers each node's last Ready status and boot id, and says when an observation is a recovery. */
export class NodeReadyTracker {
  private readonly last = new Map<string, { ready?: ReadyStatus; bootId?: string }>();

  observe(o: NodeObservation): Recovery | undefined {
    const prev = this.last.get(o.name);
    this.last.set(o.name, { ...(o.ready ? { ready: o.ready } : {}), ...(o.bootId ? { bootId: o.bootId } : {}) });
    if (!prev || o.ready !== 'True') return undefined;
    if (prev.ready === 'False' || prev.ready === 'Unknown') return { why: 'ready-again', from: prev.ready };
    if (prev.bootId && o.bootId && prev.bootId !== o.bootId) return { why: 'rebooted', previousBootId: prev.bootId };
    return undefined;
  }

  forget(node: string): void {
    this.last.delete(node);
  }
}

/**
 * Ready now, became Ready within `windowMs`, and existed well before that (a new node's first
 * Ready is not a recovery): what the reconcile loop treats as a recovery it may have missed.
 */
export function recentlyRecovered(o: NodeObservation, now: number, windowMs: number, minAgeMs = 5 * 60_000): boolean {
  if (o.ready !== 'True' || o.readySince === undefined || o.createdAt === undefined) return false;
  return now - o.readySince <= windowMs && o.readySince - o.createdAt >= minAgeMs;
}

/**
 * The same signal the kubelet's `Rebooted` event gives (src/control/sources/classify-event.ts): identity
 * ['boot', node, bootId], so webhook and watch fold into one job. Without a boot id (a node that
 * does not report one), the Ready transition time stands in.
 */
export function nodeRecoveredSignal(o: NodeObservation, source: SignalSource, summary: string): NodeRecoveredSignal {
  return {
    kind: 'node-recovered',
    version: 1,
    node: o.name,
    ...(o.bootId ? { bootId: o.bootId } : {}),
    identity: o.bootId ? ['boot', o.name, o.bootId] : ['ready', o.name, String(o.readySince ?? '')],
    evidence: { source, summary: summary.slice(0, 500), raw: boundedRaw(o.raw) },
  };
}
