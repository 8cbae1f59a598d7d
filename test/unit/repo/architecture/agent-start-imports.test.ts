import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalPvPlaceholderJob, RbdStaleMappingJob, RbdUnmapJob, RemediationJob, ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { Evidence } from '../../../../src/core/catalogue/evidence.ts';
import { CommandRecord, RunbookResult, StepRecord } from '../../../../src/core/catalogue/result.ts';
import { StepEvidence } from '../../../../src/core/catalogue/step-evidence.ts';
import { ActivityAnswer, BreakerAsk, ReserveAnswer, SealedBreakerAsk } from '../../../../src/core/controls/breaker-wire.ts';
import { ApprovalRecord, ModeOverride, ParkedJob, TripRecord } from '../../../../src/core/controls/records.ts';
import { StoredAuditEntry } from '../../../../src/core/controls/audit-seal.ts';
import { Seal } from '../../../../src/core/trust/seal.ts';
import { IntentRecord } from '../../../../workers/runbooks/residual-multipath-cleanup/intents.ts';
import { PlaceholderRecord } from '../../../../workers/runbooks/local-pv-placeholder/record.ts';
import { NODE_RUNBOOKS } from '../../../../workers/node-agent/node-runbooks.ts';

// What the node agent loads at start is what it holds while idle (bench:agent-rss). Its static
// import closure, from main.ts, must not reach what only a job needs (the runbooks' registry,
// execa, the Kubernetes client, the YAML parser: imported on first use by engine/lazy-registry.ts,
// host/run-command.ts, node-agent/node-kube.ts, core/config/load.ts), nor prom-client (the
// receiver's; the workers' series are adapters/observability/lean-exposition.ts), nor `import`
// node:http, node:crypto or node:tls, whose ES module facades load Node's bundled undici, Web
// Crypto and the bundled root certificates (adapters/http/node-http.ts, core/node-crypto.ts,
// adapters/redis/node-tls.ts).

const ROOT = join(import.meta.dirname, '../../../..');
const VALUE_IMPORT = /^\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm;

/** Every module reached by static value imports from `entry`: repo-relative paths, package names, `<file> -> node:<builtin>`. */
function staticClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    const rel = relative(ROOT, file);
    if (seen.has(rel)) return;
    seen.add(rel);
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(VALUE_IMPORT)) {
      if (!spec) continue;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else if (spec.startsWith('node:')) seen.add(`${rel} -> ${spec}`);
      else seen.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  };
  visit(join(ROOT, entry));
  return seen;
}

describe("the node agent's start path", () => {
  const closure = staticClosure('workers/node-agent/main.ts');

  it('reaches what waiting for work needs (the check sees imports)', () => {
    for (const m of ['bullmq', 'ioredis', 'zod', 'pino', 'workers/node-agent/agent.ts', 'workers/engine/lazy-registry.ts']) expect(closure, m).toContain(m);
  });

  it('does not reach the runbooks, execa, the Kubernetes client, the YAML parser or prom-client', () => {
    const jobOnly = [...closure].filter(
      (m) =>
        m === 'execa' ||
        m === 'yaml' ||
        m === '@kubernetes/client-node' ||
        m === 'workers/node-agent/registry.ts' ||
        // A runbook is its handler (observe -> plan -> act -> verify); the agent's own checks may
        // share its observation modules, never the handler.
        /^workers\/runbooks\/[^/]+\/handler\.ts$/.test(m),
    );
    expect(jobOnly).toEqual([]);
  });

  it('takes node:http, node:crypto and node:tls from their modules in src/, never by `import`', () => {
    expect([...closure].filter((m) => / -> node:(http|crypto|tls)$/.test(m))).toEqual([]);
    for (const m of ['src/adapters/http/node-http.ts', 'src/core/node-crypto.ts', 'src/adapters/redis/node-tls.ts']) expect(closure).toContain(m);
  });

  it('would see a static import of one of them', () => {
    expect(staticClosure('src/control/receiver/listen.ts')).toContain('src/control/receiver/listen.ts -> node:http');
    const fromRegistry = staticClosure('workers/node-agent/registry.ts');
    for (const runbook of NODE_RUNBOOKS) expect(fromRegistry).toContain(`workers/runbooks/${runbook}/handler.ts`);
    expect(staticClosure('workers/host/real-host.ts')).not.toContain('execa');
    expect([..."import { execa } from 'execa';\nimport type { X } from 'yaml';\n".matchAll(VALUE_IMPORT)].map((m) => m[1])).toEqual(['execa']);
  });
});

// Schemas the start path imports but only work parses (jobs, results, seals, control records,
// breaker answers, a runbook's records on disk) are z.lazy: each is built on its first parse, so an
// idle agent holds one small wrapper instead of the schema (bench/README.md, "The agent against its
// floor"). The receiver builds them with its first request, as before.
describe('schemas only work parses', () => {
  const lazy = {
    ResidualMultipathJob,
    LocalPvPlaceholderJob,
    RbdStaleMappingJob,
    RbdUnmapJob,
    Evidence,
    CommandRecord,
    StepRecord,
    RunbookResult,
    StepEvidence,
    BreakerAsk,
    SealedBreakerAsk,
    ReserveAnswer,
    ActivityAnswer,
    ModeOverride,
    ParkedJob,
    ApprovalRecord,
    TripRecord,
    StoredAuditEntry,
    Seal,
    IntentRecord,
    PlaceholderRecord,
  };

  it.each(Object.entries(lazy))('%s is built on first use', (_name, schema) => {
    expect(schema._zod.def.type).toBe('lazy');
  });

  it('parse as the schemas they wrap: a job union still tells its runbooks apart', () => {
    const r = RemediationJob.safeParse({ runbook: 'no-such-runbook' });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({ code: 'invalid_union', note: 'No matching discriminator', discriminator: 'runbook', path: ['runbook'] });
    expect(ParkedJob.safeParse({ jobId: 'j', queue: 'q', runbook: 'r', reason: 'nope', why: 'w', since: 's' }).error?.issues[0]?.path).toEqual(['reason']);
  });
});
