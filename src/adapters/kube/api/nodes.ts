import type { V1Node } from '@kubernetes/client-node';
import { z } from '../../../core/zod.ts';
import type { CoreApi } from './apis.ts';
import type { NodeInfo, NodeTaint } from '../lookups.ts';
import { isNotFound } from './not-found.ts';

// Nodes by name and by address. An RBD watcher is an IP:port/nonce; the node that holds it is the
// one listing that IP among its addresses.

// The fields fencing decides on are parsed, not trusted: the client library hands times over as
// Date, a JSON dump (kubectl, fixtures) as text, and a value that does not parse is left unset,
// which every reader takes as "unknown" (never as "long ago" or "no taint that matters").
const Time = z.pipe(
  z.union([z.date(), z.string()]),
  z.transform((t: Date | string, ctx) => {
    const d = new Date(t);
    if (Number.isNaN(d.getTime())) {
      ctx.issues.push({ code: 'custom', message: `not a time: ${String(t)}`, input: t });
      return z.NEVER;
    }
    return d.toISOString();
  }),
);
const Condition = z.object({ type: z.string(), status: z.string(), lastTransitionTime: z.nullish(Time) });
const Taint = z.object({ key: z.string(), value: z.nullish(z.string()), effect: z.string(), timeAdded: z.nullish(Time) });

function readySinceOf(n: V1Node): string | undefined {
  const raw = n.status?.conditions?.find((c) => c.type === 'Ready');
  const parsed = Condition.safeParse(raw);
  return parsed.success ? (parsed.data.lastTransitionTime ?? undefined) : undefined;
}

function taintsOf(n: V1Node): NodeTaint[] {
  const parsed = z.array(Taint).safeParse(n.spec?.taints ?? []);
  // An unreadable taint list counts as none: a taint only ever widens what may be done.
  if (!parsed.success) return [];
  return parsed.data.map((t) => ({
    key: t.key,
    effect: t.effect,
    ...(t.value ? { value: t.value } : {}),
    ...(t.timeAdded ? { timeAdded: t.timeAdded } : {}),
  }));
}

export function nodeInfo(n: V1Node): NodeInfo {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
  const readySince = readySinceOf(n);
  const taints = taintsOf(n);
  return {
    name: n.metadata?.name ?? '',
    ...(n.metadata?.uid ? { uid: n.metadata.uid } : {}),
    addresses: (n.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
    ...(ready === 'True' || ready === 'False' || ready === 'Unknown' ? { ready } : {}),
    ...(readySince ? { readySince } : {}),
    ...(taints.length > 0 ? { taints } : {}),
    ...(n.status?.nodeInfo?.bootID ? { bootId: n.status.nodeInfo.bootID } : {}),
    labels: { ...(n.metadata?.labels ?? {}) },
  };
}

export async function readNode(core: CoreApi, name: string): Promise<NodeInfo | undefined> {
  try {
    return nodeInfo(await core.readNode({ name }));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function findNodesByAddress(core: CoreApi, address: string): Promise<NodeInfo[]> {
  const list = await core.listNode({});
  return list.items.filter((n) => (n.status?.addresses ?? []).some((a) => a.address === address)).map(nodeInfo);
}
