// Import rules, checked by `npm run lint` (in `npm test`), which cruises src/ and workers/.
// The layers are the folders under src/ and the top-level workers/ beside it:
//   src/core/      what every process shares and that touches nothing: job catalogue and schemas,
//                  signals, the seal and keys, control records, configuration
//   src/adapters/  the outside world behind ports: Redis, the job store (BullMQ), the control and
//                  statistics stores, the Kubernetes API, logs and metrics, process supervision
//   src/control/   the control plane: receiver, HTTP routes, ingest, triage, sources, watches,
//                  console, API, CLI, enrolment, secrets
//   workers/       the data plane: the node agent and the cluster worker, the engine, the Host port
//                  and the runbooks (docs/decisions/0007)
// Arrows run one way: src/core <- src/adapters <- (src/control | workers); workers/ imports
// src/core and src/adapters only, nothing under src/ imports workers/, and the control plane and
// the workers meet only in Redis. No import loop anywhere, not even between two folders of one layer.
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
      comment: 'core/ is what every process shares: it depends on no adapter and no plane (nor on workers/: src-not-on-workers).',
      from: { path: '^src/core/' },
      to: { path: '^src/(adapters|control)/' },
    },
    {
      name: 'adapters-only-on-core',
      severity: 'error',
      comment: 'An adapter serves both planes, so it knows neither (workers/: src-not-on-workers).',
      from: { path: '^src/adapters/' },
      to: { path: '^src/control/' },
    },
    {
      name: 'workers-on-core-and-adapters-only',
      severity: 'error',
      comment:
        'workers/ (the data plane) imports src/core and src/adapters only: never the receiver, its console, API, sources or anything else of the control plane.',
      from: { path: '^workers/' },
      to: { path: '^src/', pathNot: '^src/(core|adapters)/' },
    },
    {
      name: 'src-not-on-workers',
      severity: 'error',
      comment: 'Nothing under src/ imports workers/: the control plane and the workers meet only in Redis and the shared core.',
      from: { path: '^src/' },
      to: { path: '^workers/' },
    },
    {
      name: 'bullmq-only-in-the-job-store',
      severity: 'error',
      comment: 'BullMQ (its classes, key names and scripts) is known behind the JobStore port only.',
      from: { path: '^(src|workers)/', pathNot: '^src/adapters/jobstore/' },
      to: { path: 'node_modules/bullmq/' },
    },
    {
      name: 'zod-mini-below-the-control-plane',
      severity: 'error',
      comment:
        "src/core/, src/adapters/ and workers/ build schemas with zod's mini API, taken from src/core/zod.ts only: the node agent holds whatever zod API it imports, and the classic one costs it ~1.5 MiB more (docs/decisions/0004).",
      from: { path: '^(src/(core|adapters)|workers)/', pathNot: '^src/core/zod[.]ts$' },
      to: { path: 'node_modules/zod/' },
    },
    {
      name: 'no-test-code-in-production',
      severity: 'error',
      comment: 'Production code never imports tests, benches or their support code.',
      from: { path: '^(src|workers)/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'no-dev-dependencies-in-production',
      severity: 'error',
      comment: 'The image installs production dependencies only.',
      from: { path: '^(src|workers)/' },
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
