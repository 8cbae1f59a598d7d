import { isDeepStrictEqual } from 'node:util';

// What test/testkit/fake-kube-api.ts checks on a write before it stores it, as kube-apiserver's
// validation does, so a write the real server refuses is refused here too (422 Invalid, with the
// field causes the real answer carries). Built in: events.k8s.io/v1 Events, from
// pkg/apis/core/validation/events.go (ValidateEventCreate, ValidateEventUpdate): on an update
// through events.k8s.io/v1 only `series` (and metadata) may change; note, reason, type, action,
// regarding, related, reportingController/Instance and eventTime (to the microsecond) are
// immutable. The server validates the internal core Event, so a field is named by its internal
// name in the answer: the v1 `note` is `message`, `regarding` is `involvedObject`. Other
// collections get their validators from the test (a CRD's schema: FakeKubeApi.validate).

type Obj = Record<string, any>;

export interface FieldError {
  field: string;
  reason: 'FieldValueRequired' | 'FieldValueInvalid';
  message: string;
}

/** Checks one write: `old` is the stored object on an update, undefined on a create. */
export type WriteValidator = (next: Obj, old: Obj | undefined) => FieldError[];

const required = (field: string): FieldError => ({ field, reason: 'FieldValueRequired', message: 'Required value' });
const invalid = (field: string, value: unknown, detail: string): FieldError => ({
  field,
  reason: 'FieldValueInvalid',
  message: `Invalid value: ${JSON.stringify(value ?? '')}: ${detail}`,
});

const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** MicroTime to the microsecond (what the server compares eventTime on). */
const micros = (t: unknown): string | undefined => {
  if (typeof t !== 'string') return undefined;
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(t);
  if (!m) return t;
  return `${new Date(`${m[1]}${m[3]}`).toISOString().slice(0, 19)}.${(m[2] ?? '').padEnd(6, '0').slice(0, 6)}`;
};

function seriesErrors(e: Obj): FieldError[] {
  const s = e['series'] as Obj | undefined;
  if (!s) return [];
  const out: FieldError[] = [];
  if (!(typeof s['count'] === 'number' && s['count'] >= 2)) out.push(invalid('series.count', '', 'should be at least 2'));
  if (!s['lastObservedTime']) out.push(required('series.lastObservedTime'));
  return out;
}

function createErrors(e: Obj): FieldError[] {
  const out: FieldError[] = [];
  const meta = (e['metadata'] ?? {}) as Obj;
  const ns = String(meta['namespace'] ?? '');
  const regardingNs = String((e['regarding'] as Obj | undefined)?.['namespace'] ?? '');
  if (!e['eventTime']) out.push(required('eventTime'));
  if (regardingNs === '' && ns !== 'default' && ns !== 'kube-system')
    out.push(invalid('involvedObject.namespace', regardingNs, 'does not match event.namespace'));
  const controller = String(e['reportingController'] ?? '');
  if (controller === '') out.push(required('reportingController'));
  else if (!QUALIFIED_NAME.test(controller)) out.push(invalid('reportingController', controller, 'must be a qualified name'));
  const instance = String(e['reportingInstance'] ?? '');
  if (instance === '') out.push(required('reportingInstance'));
  if (instance.length > 128) out.push(invalid('reportingInstance', '', 'can have at most 128 characters'));
  for (const f of ['action', 'reason'] as const) {
    const v = String(e[f] ?? '');
    if (v === '') out.push(required(f));
    if (v.length > 128) out.push(invalid(f, '', 'can have at most 128 characters'));
  }
  if (String(e['note'] ?? '').length > 1024) out.push(invalid('message', '', 'can have at most 1024 characters'));
  if (!DNS_SUBDOMAIN.test(String(meta['name'] ?? '')) || String(meta['name']).length > 253)
    out.push(invalid('metadata.name', meta['name'], 'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters'));
  if (e['type'] !== 'Normal' && e['type'] !== 'Warning') out.push(invalid('type', '', `has invalid value: ${String(e['type'] ?? '')}`));
  for (const f of ['deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'deprecatedCount', 'deprecatedSource'])
    if (e[f] !== undefined && e[f] !== null && e[f] !== 0)
      out.push(
        invalid(
          f.replace(/^deprecated(.)/, (_m, c: string) => c.toLowerCase()),
          '',
          'needs to be unset',
        ),
      );
  return [...out, ...seriesErrors(e)];
}

/** The internal names the server's immutability errors use, by v1 field. */
const IMMUTABLE: ReadonlyArray<[v1: string, internal: string]> = [
  ['regarding', 'involvedObject'],
  ['reason', 'reason'],
  ['note', 'message'],
  ['type', 'type'],
  ['action', 'action'],
  ['related', 'related'],
  ['reportingController', 'reportingController'],
  ['reportingInstance', 'reportingInstance'],
];

export const validateEventsV1Event: WriteValidator = (next, old) => {
  if (!old) return createErrors(next);
  const out: FieldError[] = createErrors(next).filter((e) => !e.field.startsWith('series'));
  if (!isDeepStrictEqual(next['series'], old['series'])) out.push(...seriesErrors(next));
  for (const [v1, internal] of IMMUTABLE) if (!isDeepStrictEqual(next[v1], old[v1])) out.push(invalid(internal, next[v1], 'field is immutable'));
  if (micros(next['eventTime']) !== micros(old['eventTime'])) out.push(invalid('eventTime', next['eventTime'], 'field is immutable'));
  return out;
};

/** The 422 kube-apiserver answers for a write its validation refused. */
export function invalidStatus(kind: string, group: string, name: string, errors: readonly FieldError[]): Obj {
  const gk = group ? `${kind}.${group}` : kind;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${gk} "${name}" is invalid: ${errors.map((e) => `${e.field}: ${e.message}`).join(', ')}`,
    reason: 'Invalid',
    details: { name, ...(group ? { group } : {}), kind, causes: errors.map((e) => ({ reason: e.reason, message: e.message, field: e.field })) },
    code: 422,
  };
}
