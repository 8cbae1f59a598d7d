import fc from 'fast-check';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LeanCounter } from '../../../../src/adapters/observability/lean-exposition.ts';
import { createWorkerMetrics } from '../../../../src/adapters/observability/worker-metrics.ts';

// The workers' counters are rendered without prom-client; a scrape must read the same as
// prom-client's for the same increments: names, HELP and TYPE, label quoting, values.

const spec = { name: 'volume_medic_test_total', help: 'A test counter: with a back\\slash\nand a newline.', labelNames: ['runbook', 'outcome'] as const };
const sorted = (text: string): string[] => text.split('\n').filter(Boolean).sort();

describe('LeanCounter', () => {
  it("renders what prom-client's Counter renders for the same increments", async () => {
    const label = fc.oneof(fc.constantFrom('rbd-unmap', 'ok', '', 'a"b', 'a\\b', 'line\nbreak', 'ü'), fc.string({ maxLength: 12 }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(label, label, fc.integer({ min: 1, max: 5 })), { maxLength: 12 }), async (incs) => {
        const registry = new Registry();
        const theirs = new Counter({ ...spec, labelNames: [...spec.labelNames], registers: [registry] });
        const ours = new LeanCounter(spec);
        for (const [runbook, outcome, by] of incs) {
          theirs.inc({ runbook, outcome }, by);
          ours.inc({ runbook, outcome }, by);
        }
        expect(sorted(ours.exposition())).toEqual(sorted(await registry.metrics()));
      }),
      { numRuns: 200 },
    );
  });

  it("a worker's two counters, with their names and a series only once counted", () => {
    const m = createWorkerMetrics();
    expect(m.exposition()).not.toMatch(/^volume_medic_worker_\w+\{/m);
    m.finished.inc({ runbook: 'rbd-unmap', outcome: 'succeeded' });
    m.finished.inc({ runbook: 'rbd-unmap', outcome: 'succeeded' });
    m.untrusted.inc({ kind: 'job', reason: 'replayed' });
    expect(m.exposition()).toMatch(/^volume_medic_worker_jobs_finished_total\{runbook="rbd-unmap",outcome="succeeded"\} 2$/m);
    expect(m.exposition()).toMatch(/^volume_medic_worker_untrusted_refused_total\{kind="job",reason="replayed"\} 1$/m);
    expect(m.exposition()).toMatch(/^# TYPE volume_medic_worker_untrusted_refused_total counter$/m);
  });
});
