// A bounded memo for hot paths: the newest entries, in two generations.
//
// Why not one Map that drops its oldest entry (`map.keys().next()`) when it is full: a JS Map
// keeps deleted entries as holes until it rehashes, and iteration starts at the oldest slot, so
// once a map of 100,000 entries has dropped its oldest tens of thousands, each `keys().next()`
// walks past all of those holes first: that was most of the receiver's CPU per new job once its
// known-keys memo had filled, and this class costs a tiny fraction of it (bench/README.md,
// "Figures behind the code").
//
// Here new entries go into the young generation; when the next one would take it over half the
// capacity it becomes the old one and the previous old one is dropped whole. Nothing is
// iterated, every operation is O(1), and dropping a generation is one object for the garbage
// collector to forget. What it keeps: never more than the capacity; always the newest entries
// up to half of it (less the one that did not fit), oldest generation forgotten first.

/** Values are never undefined, so a lookup is one `get` per generation. */
export class GenerationalMap<K, V extends NonNullable<unknown>> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private youngWeight = 0;
  private oldWeight = 0;
  private readonly half: number;
  private readonly weigh: (key: K, value: V) => number;

  /**
   * `capacity`: the most the entries weigh together (`weigh`: 1 per entry by default); 0 keeps
   * nothing. An entry heavier than half the capacity is not kept.
   */
  constructor(capacity: number, weigh: (key: K, value: V) => number = () => 1) {
    if (!(capacity >= 0)) throw new RangeError(`capacity must be 0 or more, got ${capacity}`);
    this.half = capacity / 2;
    this.weigh = weigh;
  }

  /** Entries held (of both generations). */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** What the entries held weigh together. */
  get weight(): number {
    return this.youngWeight + this.oldWeight;
  }

  get(key: K): V | undefined {
    return this.young.get(key) ?? this.old.get(key);
  }

  has(key: K): boolean {
    return this.young.has(key) || this.old.has(key);
  }

  /** Sets the entry as the newest (an older value of the key is dropped). */
  set(key: K, value: V): void {
    this.delete(key);
    const w = this.weigh(key, value);
    if (w > this.half) return;
    if (this.youngWeight + w > this.half) {
      this.old = this.young;
      this.oldWeight = this.youngWeight;
      this.young = new Map();
      this.youngWeight = 0;
    }
    this.young.set(key, value);
    this.youngWeight += w;
  }

  delete(key: K): boolean {
    const y = this.young.get(key);
    if (y !== undefined) {
      this.youngWeight -= this.weigh(key, y);
      return this.young.delete(key);
    }
    const o = this.old.get(key);
    if (o !== undefined) {
      this.oldWeight -= this.weigh(key, o);
      return this.old.delete(key);
    }
    return false;
  }

  clear(): void {
    this.young = new Map();
    this.old = new Map();
    this.youngWeight = 0;
    this.oldWeight = 0;
  }
}
