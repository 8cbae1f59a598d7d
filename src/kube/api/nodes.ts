import type { V1Node } from '@kubernetes/client-node';
import type { CoreApi } from './apis.ts';
import type { NodeInfo } from '../lookups.ts';
import { isNotFound } from './not-found.ts';

// Nodes by name and by address. An RBD watcher is an IP:port/nonce; the node that holds it is the
// one listing that IP among its addresses.

export function nodeInfo(n: V1Node): NodeInfo {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
  return {
    name: n.metadata?.name ?? '',
    ...(n.metadata?.uid ? { uid: n.metadata.uid } : {}),
    addresses: (n.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
    ...(ready === 'True' || ready === 'False' || ready === 'Unknown' ? { ready } : {}),
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

export async function findNodeByAddress(core: CoreApi, address: string): Promise<NodeInfo | undefined> {
  const list = await core.listNode({});
  const node = list.items.find((n) => (n.status?.addresses ?? []).some((a) => a.address === address));
  return node ? nodeInfo(node) : undefined;
}
