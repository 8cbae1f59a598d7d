import type { Kind, KubeObject, ObjectStore } from '../../src/control/secrets/store.ts';

// The secrets hook's store in memory (src/control/secrets/store.ts): what the API server keeps, for unit
// tests of the chart's Secrets. Merge patches as RFC 7386 for the two levels the hook writes.

export class MemoryObjectStore implements ObjectStore {
  readonly objects = new Map<string, KubeObject>();
  readonly writes: string[] = [];

  async get(kind: Kind, name: string): Promise<KubeObject | undefined> {
    const o = this.objects.get(`${kind}/${name}`);
    return o ? structuredClone(o) : undefined;
  }

  async create(o: KubeObject): Promise<boolean> {
    const key = `${o.kind}/${o.metadata.name}`;
    if (this.objects.has(key)) return false;
    this.objects.set(key, structuredClone(o));
    this.writes.push(`create ${key}`);
    return true;
  }

  async patch(kind: Kind, name: string, patch: Record<string, unknown>): Promise<void> {
    const key = `${kind}/${name}`;
    const o = this.objects.get(key);
    if (!o) throw new Error(`${key} not found`);
    const p = patch as { metadata?: { annotations?: Record<string, string> }; data?: Record<string, string> };
    if (p.metadata?.annotations) o.metadata.annotations = { ...o.metadata.annotations, ...p.metadata.annotations };
    if (p.data) o.data = { ...o.data, ...p.data };
    this.writes.push(`patch ${key}`);
  }

  /** A Secret's data, decoded; a ConfigMap's as it is. */
  data(kind: Kind, name: string): Record<string, string> {
    const o = this.objects.get(`${kind}/${name}`);
    if (!o) throw new Error(`${kind}/${name} was not made`);
    return kind === 'Secret' ? Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])) : { ...o.data };
  }
}
