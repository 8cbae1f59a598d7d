// Import rules (issue 32), checked by `npm run lint:deps` in `npm test`. The layers by folder:
//   core-ish    src/catalogue, src/signals, src/trust, src/config, src/collections
//   adapters    src/queues, src/observability, src/kube/{api,rest}, src/process
//   control     src/http, src/console, src/ingest, src/triage, src/sources, src/auth, src/cli,
//               src/enrolment, src/controls, src/kube (watches), src/receiver.ts, src/main.ts
//   agents      workers/**
// Violations that exist today are listed in .dependency-cruiser-known-violations.json
// (`npm run lint:deps:baseline` rewrites it): they are the debt issue 32 pays down, and a new
// one fails the check.
/** @type {import('dependency-cruiser').IConfiguration} */
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
      name: 'control-plane-not-from-agents',
      severity: 'error',
      comment: 'The agents depend on the shared core and adapters, never on the receiver, its console, API or sources.',
      from: { path: '^workers/' },
      to: { path: '^src/(http|console|ingest|triage|sources|auth|cli|enrolment)/|^src/(receiver|main)\\.ts$' },
    },
    {
      name: 'agents-not-from-control-plane',
      severity: 'error',
      comment: 'Nothing under src/ imports the agents: the control plane and the agents meet only in Redis and the shared core.',
      from: { path: '^src/' },
      to: { path: '^workers/' },
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
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.json'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
