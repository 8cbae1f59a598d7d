import { boundedRaw } from '../../core/catalogue/evidence.ts';
import type { FilesystemReadonlySignal } from '../../core/signals/index.ts';

// NPD's permanent kernel-monitor conditions on a watched Node (docs/decisions/0008 §1.4):
// ReadonlyFilesystem=True with reason FilesystemIsReadOnly, XfsShutdown=True with XfsHasShutdown.
// NPD never clears them, so each transition (its lastTransitionTime) is one signal, with the
// identity the NPD webhook gives the same condition (src/control/sources/npd.ts): both fold into one job.

const READONLY_CONDITIONS: Readonly<Record<string, string>> = { ReadonlyFilesystem: 'FilesystemIsReadOnly', XfsShutdown: 'XfsHasShutdown' };

interface PlainCondition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string | Date;
}

const iso = (t: string | Date | undefined): string =>
  t === undefined ? '' : typeof t === 'string' ? t : Number.isNaN(t.getTime()) ? '' : t.toISOString().replace('.000Z', 'Z');

/** Remembers which transitions it already signalled, per node. */
export class NodeReadonlyTracker {
  private readonly seen = new Map<string, Set<string>>();

  /** The signals of conditions that turned True since this tracker last saw the node. */
  observe(node: { metadata?: { name?: string }; status?: { conditions?: PlainCondition[] } }): FilesystemReadonlySignal[] {
    const name = node.metadata?.name;
    if (!name) return [];
    const out: FilesystemReadonlySignal[] = [];
    const seen = this.seen.get(name) ?? new Set<string>();
    for (const c of node.status?.conditions ?? []) {
      const reason = c.type ? READONLY_CONDITIONS[c.type] : undefined;
      if (!reason || c.status !== 'True' || c.reason !== reason) continue;
      const at = iso(c.lastTransitionTime);
      const key = `${c.type}|${at}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({
        kind: 'filesystem-readonly',
        version: 1,
        node: name,
        identity: ['npd-condition', name, c.type ?? '', at],
        evidence: {
          source: 'k8s-watch',
          summary: `${c.type}=True (${c.reason}) on node ${name}: ${c.message ?? ''} (watch)`.slice(0, 500),
          raw: boundedRaw({ kind: 'Node', metadata: { name }, status: { conditions: [c] } }),
        },
      });
    }
    this.seen.set(name, seen);
    return out;
  }

  forget(node: string): void {
    this.seen.delete(node);
  }
}
