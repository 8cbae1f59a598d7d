// The bytes a seal covers: JSON with object keys sorted (recursively), no whitespace, and the
// values JSON itself would keep (undefined and functions dropped from objects, null in arrays).
// The issuer seals the value it stores; the verifier recomputes this from what came back out of
// Redis (JSON.parse of BullMQ's JSON.stringify), so both sides see the same bytes whatever order
// the keys travelled in.

export function canonical(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('a sealed value holds a non-finite number');
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (Array.isArray(value)) return `[${value.map((v) => (v === undefined || typeof v === 'function' ? 'null' : canonical(v))).join(',')}]`;
      const obj = value as Record<string, unknown>;
      const parts: string[] = [];
      for (const k of Object.keys(obj).sort()) {
        const v = obj[k];
        if (v === undefined || typeof v === 'function') continue;
        parts.push(`${JSON.stringify(k)}:${canonical(v)}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      throw new TypeError(`a sealed value holds a ${typeof value}`);
  }
}
