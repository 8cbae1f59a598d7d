import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import type { Host } from './host.ts';
import { createAuditHost } from './audit-host.ts';

// The dry-run host: reads and read-only commands reach the node, changes are recorded as what
// would have been done and never performed. It is the mode's safety net: even a step that
// forgets it is in dry-run cannot change the node through it.

export function createDryRunHost(inner: Host, sink: (record: CommandRecord) => void = () => undefined): Host {
  return createAuditHost(inner, { simulate: true, sink });
}
