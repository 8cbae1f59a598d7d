// A node's credentials (its queue's work keys, its Redis password) are derived from the
// receiver's roots, the node's name and the node's generation: an integer the receiver raises
// when the Node is deleted, when a Node of the same name but another uid enrols, and when an
// operator revokes the node (docs/decisions/0005-revocable-node-credentials.md). Generation 0 is
// the derivation of every node never raised, byte for byte the one before generations existed,
// so nothing changes for a node until it is revoked.
//
// A key of generation g > 0 is named `<role>.<kid>.g<g>` (the key file's id, then the
// generation): a seal names the generation it was made with, so a process holding another
// generation of the queue's keys refuses it as a key it does not hold, and can say why.

/** The generation each queue's keys are derived at; 0 for every queue it does not name. */
export interface QueueGenerations {
  of(queue: string): number;
}

/** The largest generation a key name may carry (fits Redis' integers and a 10-digit regex). */
export const MAX_GENERATION = 2_000_000_000;

/**
 * The generations a process derives with, in memory: read on the hot path (the dispatcher seals
 * every job with its queue's generation) without a Redis round trip, filled from Redis by the
 * receiver and the cluster worker (src/adapters/redis/node-generations.ts). A generation only
 * rises: a lower one read back (a key deleted or rewritten in Redis) never brings older keys back
 * in this process.
 */
export class GenerationTable implements QueueGenerations {
  readonly #byQueue = new Map<string, number>();

  of(queue: string): number {
    return this.#byQueue.get(queue) ?? 0;
  }

  /** Sets `queue` to `generation` if that is higher; true when it rose. */
  raise(queue: string, generation: number): boolean {
    if (!Number.isSafeInteger(generation) || generation <= 0 || generation > MAX_GENERATION) return false;
    if (generation <= this.of(queue)) return false;
    this.#byQueue.set(queue, generation);
    return true;
  }

  get size(): number {
    return this.#byQueue.size;
  }
}

/** A key id (`<kid>`) or name (`<role>.<kid>`) at a generation: unchanged at 0. */
export const atGeneration = (idOrName: string, generation: number): string => (generation === 0 ? idOrName : `${idOrName}.g${generation}`);

const SUFFIX = /^(.*)\.g([1-9][0-9]{0,9})$/;

/** A key name or id split into the root's and its generation (0 when it names none). */
export function generationOfKey(name: string): { base: string; generation: number } {
  const m = SUFFIX.exec(name);
  return m ? { base: m[1]!, generation: Number(m[2]) } : { base: name, generation: 0 };
}

/**
 * Why a seal made with key `sealName` is refused by a keyring holding the keys named `held` when
 * these hold that root's key of another generation (an enrolled process: its own queue's keys of
 * one generation): the seal was made before the node's credentials were revoked, or after this
 * process last enrolled. Undefined when they hold no other generation of that key.
 */
export function otherGeneration(held: Iterable<string>, sealName: string): string | undefined {
  const sealed = generationOfKey(sealName);
  for (const name of held) {
    const have = generationOfKey(name);
    if (have.base !== sealed.base || have.generation === sealed.generation) continue;
    return have.generation > sealed.generation
      ? `sealed with generation ${sealed.generation} of this queue's keys, which was revoked (this process holds generation ${have.generation})`
      : `sealed with generation ${sealed.generation} of this queue's keys; this process holds generation ${have.generation} and enrols again`;
  }
  return undefined;
}
