import { z } from '../zod.ts';
import { RUNBOOKS } from '../catalogue/jobs.ts';

// The receiver relays to an enrolled node agent, in its answers to the agent's breaker asks (an
// uncounted job start's `activity`, a destructive step's `reserve`: src/core/controls/breaker-wire.ts), the
// newest mode and pause record it knows of every field that agent's jobs read, verbatim, seals
// included. The agent takes each as the newest record of its field it knows of (SealedRecords
// learn), before it reads Redis: an older record put back into Redis (with the receiver's own
// password) is then a replay, refused as one, also by an agent that never read the newer record
// from Redis (idle through the change, or just started with an empty memory).
//
// Nothing here needs to be believed: each record carries the API's seal (ECDSA on an enrolled
// agent: only the receiver can make one), so a network relay or a Redis writer can at most drop
// the relay or send an older one, which lowers nothing (a reader keeps the newest generation it
// accepted) and leaves the agent where it stood without a relay. Conversely a receiver replica
// that has not read a change yet relays the older record: the agent's own memory of the newer one
// stands. The relay can only raise a floor to a record the API sealed, never block a field.

/** At most this many fields in a relay; each record's text at most RECORD_MAX characters. */
const MAX_FIELDS = 2 * RUNBOOKS.length + 3;
const RECORD_MAX = 8192;

export type RelayKind = 'mode' | 'pause';

/** The mode and pause fields a job of `runbook` on `node` reads (the cluster worker's: no node). */
export function jobControlFields(runbook: string, node?: string): { modes: string[]; pause: string[] } {
  const nodeField = node ? `node/${node}` : 'node/';
  return { modes: [`runbook/${runbook}`, nodeField], pause: ['cluster', nodeField, `runbook/${runbook}`] };
}

/** Every field any job of `node` reads: what the receiver relays to that node's agent. */
export function relayFields(node: string): Array<{ kind: RelayKind; field: string }> {
  const nodeField = `node/${node}`;
  return [
    { kind: 'mode', field: nodeField },
    ...RUNBOOKS.map((r) => ({ kind: 'mode' as const, field: `runbook/${r}` })),
    { kind: 'pause', field: 'cluster' },
    { kind: 'pause', field: nodeField },
    ...RUNBOOKS.map((r) => ({ kind: 'pause' as const, field: `runbook/${r}` })),
  ];
}

/** The relay's key of a field: `<kind>/<field>` (as sealed-records.ts names a record's subject). */
export const relayKey = (kind: RelayKind, field: string): string => `${kind}/${field}`;

/** `<kind>/<field>` -> the newest stored record the receiver accepted for that field. */
export const RelayedControls = z.lazy(() =>
  z
    .record(z.string().check(z.maxLength(300), z.regex(/^(mode|pause)\//)), z.string().check(z.maxLength(RECORD_MAX)))
    .check(z.refine((r) => Object.keys(r).length <= MAX_FIELDS, `at most ${MAX_FIELDS} relayed control records`)),
);
export type RelayedControls = z.infer<typeof RelayedControls>;

/** The relay as a part of a breaker answer (absent: a receiver that relays nothing, the old behaviour). */
export const RelayPart = z.lazy(() => z.object({ controls: z.optional(RelayedControls) }));

/**
 * The relayed records `node`'s agent takes: only the fields its jobs read (anything else in the
 * answer is dropped, so a relay cannot fill the agent's memory), in relayFields' order.
 */
export function relayedFor(node: string, relay: RelayedControls | undefined): Array<{ kind: RelayKind; field: string; text: string }> {
  if (!relay) return [];
  return relayFields(node).flatMap(({ kind, field }) => {
    const text = relay[relayKey(kind, field)];
    return text ? [{ kind, field, text }] : [];
  });
}
