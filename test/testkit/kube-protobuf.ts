// kube-apiserver's protobuf encoding of a core/v1 Event, decoded to the JSON the server stores and
// answers with. node-problem-detector's client sets `ContentType: application/vnd.kubernetes.protobuf`
// (pkg/exporters/k8sexporter/problemclient/configs.go), so its Event POSTs arrive in this form; its
// patches are JSON. Only what an Event carries is decoded (field numbers from k8s.io/api
// core/v1/generated.proto and apimachinery meta/v1, runtime): the envelope is the 4 bytes `k8s\0`
// and a runtime.Unknown {typeMeta=1 {apiVersion=1, kind=2}, raw=2}. Zero times become null, as the
// server's JSON shows them; strings the client left empty stay "" (proto2 optional, always sent).

type Obj = Record<string, unknown>;

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

class Reader {
  private at = 0;
  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  get done(): boolean {
    return this.at >= this.buf.length;
  }
  varint(): bigint {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = this.buf[this.at++];
      if (b === undefined) throw new Error('protobuf: truncated varint');
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
    }
  }
  bytes(): Buffer {
    const n = Number(this.varint());
    const out = this.buf.subarray(this.at, this.at + n);
    if (out.length !== n) throw new Error('protobuf: truncated field');
    this.at += n;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 2) this.bytes();
    else if (wire === 1) this.at += 8;
    else if (wire === 5) this.at += 4;
    else throw new Error(`protobuf: wire type ${wire} not supported`);
  }
}

type Field = (r: Reader, out: Obj) => void;

function message(buf: Buffer, fields: Record<number, Field>, out: Obj = {}): Obj {
  const r = new Reader(buf);
  while (!r.done) {
    const tag = Number(r.varint());
    const f = fields[tag >> 3];
    if (f) f(r, out);
    else r.skip(tag & 7);
  }
  return out;
}

const str =
  (name: string): Field =>
  (r, out) => {
    out[name] = r.bytes().toString('utf8');
  };
const int =
  (name: string): Field =>
  (r, out) => {
    out[name] = Number(BigInt.asIntN(64, r.varint()));
  };
const sub =
  (name: string, fields: Record<number, Field>): Field =>
  (r, out) => {
    out[name] = message(r.bytes(), fields);
  };
const stringMap =
  (name: string): Field =>
  (r, out) => {
    const e = message(r.bytes(), { 1: str('key'), 2: str('value') });
    out[name] = { ...((out[name] as Obj | undefined) ?? {}), [String(e['key'] ?? '')]: String(e['value'] ?? '') };
  };

/** meta/v1 Time (RFC 3339, seconds) or MicroTime (microseconds); the zero time is null. */
const time =
  (name: string, micro: boolean): Field =>
  (r, out) => {
    const t = message(r.bytes(), { 1: int('seconds'), 2: int('nanos') });
    const seconds = Number(t['seconds'] ?? 0);
    const nanos = Number(t['nanos'] ?? 0);
    if (seconds === 0 && nanos === 0) {
      out[name] = null;
      return;
    }
    const iso = new Date(seconds * 1000).toISOString().slice(0, 19);
    out[name] = micro ? `${iso}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z` : `${iso}Z`;
  };

const OBJECT_META: Record<number, Field> = {
  1: str('name'),
  2: str('generateName'),
  3: str('namespace'),
  5: str('uid'),
  6: str('resourceVersion'),
  8: time('creationTimestamp', false),
  11: stringMap('labels'),
  12: stringMap('annotations'),
};
const OBJECT_REFERENCE: Record<number, Field> = {
  1: str('kind'),
  2: str('namespace'),
  3: str('name'),
  4: str('uid'),
  5: str('apiVersion'),
  6: str('resourceVersion'),
  7: str('fieldPath'),
};
const EVENT: Record<number, Field> = {
  1: sub('metadata', OBJECT_META),
  2: sub('involvedObject', OBJECT_REFERENCE),
  3: str('reason'),
  4: str('message'),
  5: sub('source', { 1: str('component'), 2: str('host') }),
  6: time('firstTimestamp', false),
  7: time('lastTimestamp', false),
  8: int('count'),
  9: str('type'),
  10: time('eventTime', true),
  12: str('action'),
  13: sub('related', OBJECT_REFERENCE),
  14: str('reportingComponent'),
  15: str('reportingInstance'),
};

/** The object a protobuf request body carries, as JSON; only core/v1 Event is understood. */
export function decodeKubeProtobuf(body: Buffer): Obj {
  if (!body.subarray(0, 4).equals(MAGIC)) throw new Error('protobuf: no k8s envelope');
  const unknown = message(body.subarray(4), {
    1: sub('typeMeta', { 1: str('apiVersion'), 2: str('kind') }),
    2: (r, out) => {
      out['raw'] = r.bytes();
    },
  });
  const typeMeta = (unknown['typeMeta'] as Obj | undefined) ?? {};
  if (typeMeta['apiVersion'] !== 'v1' || typeMeta['kind'] !== 'Event') {
    throw new Error(`protobuf: ${String(typeMeta['apiVersion'])} ${String(typeMeta['kind'])} is not decoded by the fake`);
  }
  return { apiVersion: 'v1', kind: 'Event', ...omitEmpty(message(unknown['raw'] as Buffer, EVENT)) };
}

/** The server's JSON leaves out empty `omitempty` fields; an Event's reporting fields have no omitempty. */
const ALWAYS = new Set(['reportingComponent', 'reportingInstance']);

function omitEmpty(o: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    if ((v === '' || v === 0) && !ALWAYS.has(k)) continue;
    out[k] = v && typeof v === 'object' ? omitEmpty(v as Obj) : v;
  }
  return out;
}
