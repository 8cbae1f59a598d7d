import { createHash } from 'node:crypto';
import { COMPONENTS, type Component } from '../../adapters/kube/rbac.ts';

// The bundled Redis's ACL file from the chart's files/users.acl.template: comment lines dropped
// (Redis's ACL files have none), {{prefix}} the queue prefix, each {{<process>-sha256}} the SHA-256
// of that process's password (never the password itself). One renderer for the chart's hook Job
// (src/control/secrets/ensure.ts) and `node scripts/deploy/redis-secrets.ts`.

// The prefix becomes an ACL key pattern (~<prefix>:*): no glob characters, no spaces.
// The same rule as QUEUE_PREFIX's (src/core/config/sections/queues.ts).
const PREFIX = /^[A-Za-z0-9_-]{1,64}$/;

export function renderRedisAcl(opts: { prefix: string; passwords: Readonly<Record<Component, string>>; template: string }): string {
  if (!PREFIX.test(opts.prefix)) throw new Error(`QUEUE_PREFIX "${opts.prefix}" cannot be an ACL key pattern: letters, digits, _ and - only`);
  const values: Record<string, string> = { prefix: opts.prefix };
  for (const c of COMPONENTS) values[`${c}-sha256`] = createHash('sha256').update(opts.passwords[c]).digest('hex');
  const out = opts.template
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    .map((l) =>
      l.replace(/\{\{([a-z0-9-]+)\}\}/g, (_m, k: string) => {
        const v = values[k];
        if (v === undefined) throw new Error(`users.acl.template: unknown placeholder {{${k}}}`);
        return v;
      }),
    );
  return `${out.join('\n')}\n`;
}
