import { boundedRaw } from '../../core/catalogue/evidence.ts';
import type { TaintSighting } from '../../core/controls/records.ts';
import type { NodeOutOfServiceReadySignal } from '../../core/signals/index.ts';

// The Node watch's part in out-of-service-taint-release (docs/decisions/0008 §4.1): the first time
// it sees a node's `node.kubernetes.io/out-of-service` taint it records the boot the node runs
// (the store keeps the first of all replicas); while the node is Ready with the taint it hands
// triage a signal carrying that first sight; when the taint goes it drops the record. What this
// process already knows it keeps, so an unchanged Node costs no Redis call.

const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';

export interface SightingStore {
  firstSight(seen: TaintSighting): Promise<TaintSighting>;
  drop(node: string): Promise<void>;
}

interface PlainNode {
  metadata?: { name?: string };
  spec?: { taints?: Array<{ key?: string; value?: string; effect?: string; timeAdded?: string | Date }> | null };
  status?: { conditions?: Array<{ type?: string; status?: string }>; nodeInfo?: { bootID?: string } };
}

/** The client hands times over as Date, raw JSON as text: one ISO form, so a taint compares equal to itself. */
const iso = (t: string | Date | undefined): string | undefined => {
  if (t === undefined) return undefined;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
};

export class OutOfServiceWatch {
  readonly #store: SightingStore;
  readonly #now: () => number;
  /** node -> its record (tainted), null (seen without the taint); absent: not seen by this process. */
  readonly #known = new Map<string, TaintSighting | null>();

  constructor(store: SightingStore, now: () => number = Date.now) {
    this.#store = store;
    this.#now = now;
  }

  /** Records or drops the first sight; the signal when the node is Ready while tainted. */
  async observe(node: unknown): Promise<NodeOutOfServiceReadySignal | undefined> {
    const n = node as PlainNode;
    const name = n?.metadata?.name;
    if (!name) return undefined;
    const taint = (n.spec?.taints ?? []).find((t) => t.key === OUT_OF_SERVICE_TAINT);
    const known = this.#known.get(name);
    if (!taint) {
      if (known !== null) await this.#store.drop(name);
      this.#known.set(name, null);
      return undefined;
    }
    const timeAdded = iso(taint.timeAdded);
    const bootId = n.status?.nodeInfo?.bootID || undefined;
    const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    let record = known ?? undefined;
    if (!record || record.timeAdded !== timeAdded) {
      record = await this.#store.firstSight({
        node: name,
        ...(timeAdded ? { timeAdded } : {}),
        ...(bootId ? { bootIdAtFirstSight: bootId } : {}),
        ...(ready ? { readyAtFirstSight: ready } : {}),
        firstSeenAt: new Date(this.#now()).toISOString(),
      });
      this.#known.set(name, record);
    }
    if (ready !== 'True') return undefined;
    return {
      kind: 'node-out-of-service-ready',
      version: 1,
      node: name,
      taint: {
        ...(record.timeAdded ? { timeAdded: record.timeAdded } : {}),
        ...(record.bootIdAtFirstSight ? { bootIdAtFirstSight: record.bootIdAtFirstSight } : {}),
        firstSeenAt: record.firstSeenAt,
      },
      ...(bootId ? { bootId } : {}),
      identity: ['oos', name, record.timeAdded ?? record.firstSeenAt, bootId ?? ''],
      evidence: {
        source: 'k8s-watch',
        summary:
          `Node ${name} is Ready while tainted ${OUT_OF_SERVICE_TAINT}:${taint.effect ?? ''} (first seen ${record.firstSeenAt} on boot ${record.bootIdAtFirstSight ?? 'unknown'}, boot ${bootId ?? 'unknown'} now)`.slice(
            0,
            500,
          ),
        raw: boundedRaw({ kind: 'Node', metadata: { name }, spec: { taints: [{ ...taint, timeAdded }] }, status: { nodeInfo: { bootID: bootId } } }),
      },
    };
  }

  forget(node: string): void {
    this.#known.delete(node);
  }
}
