import { isNodeName } from '../catalogue/names.ts';
import { nodeQueueName } from '../catalogue/queues.ts';

// Whose memory a key is, and which of a node's keys go first when it must give memory back.
//
// A node's keys are exactly what its own Redis user may write: `<prefix>:vm-node-{<node>}:*`
// (src/adapters/redis/node-user-acl.ts nodeUserRules). Node names hold no `}`, `*`, `?` or
// `[`, and a prefix no `:` or `{`, so a key is node n's if and only if it starts with
// `<prefix>:vm-node-{n}:`: never another node's, never the receiver's fleet keys (`<prefix>:vm:*`).

/** SCAN pattern of every node queue's keys of an installation ('{' is literal in Redis' glob). */
export const nodeKeyPattern = (prefix: string): string => `${prefix}:vm-node-{*`;

/** SCAN pattern of one node's keys: the key pattern of that node's own Redis user. */
export const keysOfNodePattern = (prefix: string, node: string): string => `${prefix}:${nodeQueueName(node)}:*`;

/** The node whose keys `key` is one of, or undefined (a fleet key, another prefix, not a node name). */
export function nodeOfKey(prefix: string, key: string): string | undefined {
  const head = `${prefix}:vm-node-{`;
  if (!key.startsWith(head)) return undefined;
  const end = key.indexOf('}', head.length);
  if (end < 0 || key[end + 1] !== ':') return undefined;
  const node = key.slice(head.length, end);
  return isNodeName(node) ? node : undefined;
}

/** Size classes: class c holds keys of [2^c, 2^(c+1)) bytes (class 0: under 2 bytes). */
const SIZE_CLASSES = 40;

export const sizeClass = (bytes: number): number => (bytes < 2 ? 0 : Math.min(SIZE_CLASSES - 1, Math.floor(Math.log2(bytes))));

/**
 * One node's keys by size class (bytes per class), built in one SCAN: what a trim needs to take
 * the bulk of its bytes first without holding every key name (a flood can be millions of small keys).
 */
export class SizeClasses {
  readonly bytes: number[] = new Array<number>(SIZE_CLASSES).fill(0);
  readonly keys: number[] = new Array<number>(SIZE_CLASSES).fill(0);
  total = 0;
  count = 0;

  add(bytes: number): void {
    const c = sizeClass(bytes);
    this.bytes[c]! += bytes;
    this.keys[c]! += 1;
    this.total += bytes;
    this.count += 1;
  }
}

/**
 * Which keys give back at least `need` bytes: whole size classes, the heaviest first (the most
 * bytes), and of the last one keys (in the order a second SCAN meets them) until `fromPartial`
 * bytes of it went. A flood is the bulk of a node's bytes, whether a few huge keys or millions of
 * small ones, so its class goes first and the records a queue normally holds (jobs of a few KiB to
 * a few hundred, an audit list, its events stream) stay as long as they can.
 */
export interface RemovalCut {
  /** Classes every key of which goes. */
  whole: ReadonlySet<number>;
  /** The class of which only `fromPartial` bytes go (-1: none). */
  partial: number;
  fromPartial: number;
}

/** Undefined when nothing needs to go; every class when the node holds less than `need`. */
export function removalCut(classes: SizeClasses, need: number): RemovalCut | undefined {
  if (need <= 0 || classes.count === 0) return undefined;
  const order = [...classes.bytes.keys()].filter((c) => classes.bytes[c]! > 0).sort((a, b) => classes.bytes[b]! - classes.bytes[a]! || b - a);
  const whole = new Set<number>();
  let taken = 0;
  for (const c of order) {
    const here = classes.bytes[c]!;
    if (taken + here >= need) return { whole, partial: c, fromPartial: need - taken };
    whole.add(c);
    taken += here;
  }
  return { whole, partial: -1, fromPartial: 0 };
}

/** Walks the second SCAN: says of each key (by its size) whether it goes. */
export class RemovalWalk {
  readonly #cut: RemovalCut;
  #takenFromPartial = 0;

  constructor(cut: RemovalCut) {
    this.#cut = cut;
  }

  takes(bytes: number): boolean {
    const c = sizeClass(bytes);
    if (this.#cut.whole.has(c)) return true;
    if (c !== this.#cut.partial || this.#takenFromPartial >= this.#cut.fromPartial) return false;
    this.#takenFromPartial += bytes;
    return true;
  }
}
