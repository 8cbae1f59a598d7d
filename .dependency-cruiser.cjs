// Import rules, checked by `npm run lint` (in `npm test`). The layers are folders under src/:
//   core/      what every process shares and that touches nothing: job catalogue and schemas,
//              signals, the seal and keys, control records, configuration
//   adapters/  the outside world behind ports: Redis, the job store (BullMQ), the control and
//              statistics stores, the Kubernetes API, logs and metrics, process supervision
//   control/   the control plane: receiver, HTTP routes, ingest, triage, sources, watches,
//              console, API, CLI, enrolment, secrets
//   agents/    the node agent and the cluster worker: engine, host, runbooks
// Arrows run one way: core <- adapters <- (control | agents); control and agents never meet
// except in Redis. No import loop anywhere, not even between two folders of one layer.
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import loop: the modules cannot be understood, tested or moved one at a time.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-imports-nothing-of-ours',
      severity: 'error',
      comment: 'core/ is what every process shares: it depends on no adapter and no plane.',
      from: { path: '^src/core/' },
      to: { path: '^src/(adapters|control|agents)/' },
    },
    {
      name: 'adapters-only-on-core',
      severity: 'error',
      comment: 'An adapter serves both planes, so it knows neither.',
      from: { path: '^src/adapters/' },
      to: { path: '^src/(control|agents)/' },
    },
    {
      name: 'agents-not-on-control-plane',
      severity: 'error',
      comment: 'The agents depend on core and adapters, never on the receiver, its console, API or sources.',
      from: { path: '^src/agents/' },
      to: { path: '^src/control/' },
    },
    {
      name: 'control-plane-not-on-agents',
      severity: 'error',
      comment: 'The control plane and the agents meet only in Redis and the shared core.',
      from: { path: '^src/control/' },
      to: { path: '^src/agents/' },
    },
    {
      name: 'bullmq-only-in-the-job-store',
      severity: 'error',
      comment: 'BullMQ (its classes, key names and scripts) is known behind the JobStore port only.',
      from: { path: '^src/', pathNot: '^src/adapters/jobstore/' },
      to: { path: 'node_modules/bullmq/' },
    },
    {
      name: 'zod-mini-below-the-control-plane',
      severity: 'error',
      comment:
        "core/, adapters/ and agents/ build schemas with zod's mini API, taken from src/core/zod.ts only: the node agent holds whatever zod API it imports, and the classic one costs it ~1.5 MiB more (docs/decisions/0004).",
      from: { path: '^src/(core|adapters|agents)/', pathNot: '^src/core/zod[.]ts$' },
      to: { path: 'node_modules/zod/' },
    },
    {
      name: 'no-test-code-in-production',
      severity: 'error',
      comment: 'Production code never imports tests, benches or their support code.',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'no-dev-dependencies-in-production',
      severity: 'error',
      comment: 'The image installs production dependencies only.',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve fails at run time, not at build time (.ts files run directly).',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
