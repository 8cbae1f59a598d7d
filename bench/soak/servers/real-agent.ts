import { loadConfig } from '../../../src/core/config/load.ts';
import { createLogger } from '../../../src/adapters/observability/logger.ts';
import type { ResidualMultipathJob } from '../../../src/core/catalogue/jobs.ts';
import { runRunbook } from '../../../workers/engine/run-runbook.ts';
import type { PlannedStep, RunbookDefinition } from '../../../workers/engine/runbook.ts';
import { expectOk } from '../../../workers/host/command-failed.ts';
import { createRealHost } from '../../../workers/host/real-host.ts';
import { createNodeAgent } from '../../../workers/node-agent/agent.ts';
import { nodeKube } from '../../../workers/node-agent/node-kube.ts';

// A real node agent for the soak (bench/soak.ts), configured from the environment as
// workers/node-agent/main.ts is (REDIS_SENTINELS, NODE_NAME, KUBECONFIG: its Events, labels and
// coordination checks go to the soak's API server), in enforce mode, whose residual-multipath-cleanup
// is the real engine running three destructive steps against a real host rooted at HOST_ROOT.
// Each step takes STEP_MS (a real `sleep`, so a SIGKILL lands mid-step) and then appends
// `<jobId> <step>` to the host's effects log: the ground truth of what took effect, and how often.
// Prints `RAN <jobId> <epoch ms>` when a run starts, `STEP <jobId> <step>` when a step starts.

export const EFFECTS_LOG = '/var/log/effects.log';
const STEPS = ['unmap:a', 'unmap:b', 'unmap:c'];

const config = loadConfig('node-agent');
const node = config.nodeName!;
const log = createLogger('soak-agent', config.logLevel);
const host = createRealHost({ root: process.env['HOST_ROOT']!, timeoutMs: 30_000 });
const stepSeconds = (Number(process.env['STEP_MS'] ?? 400) / 1000).toFixed(3);
const say = (line: string): void => void process.stdout.write(`${line}\n`);

function runbook(jobId: string): RunbookDefinition<'residual-multipath-cleanup', Record<string, never>, PlannedStep> {
  return {
    runbook: 'residual-multipath-cleanup',
    observe: async () => ({}),
    plan: () => ({
      kind: 'steps',
      summary: 'three destructive steps',
      steps: STEPS.map((id) => ({
        id,
        description: `unmap ${id}`,
        destructive: true,
        evidence: [{ claim: `${id} is ours`, source: 'soak', observedAt: new Date().toISOString(), status: 'holds' as const }],
      })),
    }),
    steps: {
      // Like `rbd unmap` of a device another may own by now: only the journal can tell it was done.
      isDone: async () => false,
      apply: async (step, h) => {
        say(`STEP ${jobId} ${step.id}`);
        expectOk(await h.run(['sleep', stepSeconds], { timeoutMs: 30_000 }));
        expectOk(await h.run(['sh', '-c', 'echo "$1" >> "$2"', 'sh', `${jobId} ${step.id}`, h.argPath(EFFECTS_LOG)]));
      },
    },
    verify: async (_job: ResidualMultipathJob) => ({ ok: true, checks: [{ what: 'every step ran', ok: true }] }),
  };
}

const kube = await nodeKube(node, log);
const agent = createNodeAgent({
  config,
  log,
  nodeLabels: kube.nodeLabels,
  events: kube.events,
  kubeRead: kube.read,
  registry: {
    'residual-multipath-cleanup': (job, ctx) => {
      say(`RAN ${ctx.jobId} ${Date.now()}`);
      return runRunbook(runbook(ctx.jobId), job, ctx, { host, stateDir: '/var/lib/volume-medic' });
    },
  },
});
agent.consumer.onFinished((id, outcome) => say(`${outcome === 'completed' ? 'DONE' : 'FAILED'} ${id}`));
await agent.consumer.ready();
say('READY');
process.on('SIGTERM', () => void agent.close().then(() => process.exit(0)));
