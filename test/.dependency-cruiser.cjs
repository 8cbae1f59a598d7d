// Import rules of the tests' helpers, checked by `npm run lint` (`depcruise test --config
// test/.dependency-cruiser.cjs`; the production rules are ../.dependency-cruiser.cjs). test/README.md
// says what each folder holds:
//   test/testkit/  in-process fakes and builders (a fake host, a fake API server, the job store in
//                  memory, payloads, jobs read through the JobStore port): start no process, so a
//                  unit test or a bench can take any of them
//   test/support/  what a tier needs around it: real servers and processes started and stopped by
//                  PID (redis-server, Alertmanager, Ceph, a registry, agents), the shared Redis,
//                  test configuration and keys, and harnesses built on the testkit's fakes
// Arrows run one way: support may use the testkit, never the reverse; and a tier's tests (unit/,
// int/, faults/, lab/, image/) import no other tier's files. (An import that does not
// resolve is the typecheck's to find: tsconfig.json covers test/.)
module.exports = {
  forbidden: [
    {
      name: 'testkit-not-on-support',
      severity: 'error',
      comment: 'test/testkit is below test/support: a fake that needed a started server or a test tier would not be in-process any more.',
      from: { path: '^test/testkit/' },
      to: { path: '^test/support/' },
    },
    {
      name: 'testkit-starts-no-process',
      severity: 'error',
      comment: 'test/testkit holds in-process fakes: what starts a process (a server, an agent, a CLI) belongs in test/support.',
      from: { path: '^test/testkit/' },
      to: { path: '^(node:)?child_process$|node_modules/execa/' },
    },
    {
      name: 'tiers-apart',
      severity: 'error',
      comment: 'A tier does not import another tier\'s folder: what two tiers share lives in test/testkit or test/support.',
      from: { path: '^test/(unit|int|faults|lab|image)/' },
      to: { path: '^test/(unit|int|faults|lab|image)/', pathNot: '^test/$1/' },
    },
    {
      name: 'jobs-through-the-port',
      severity: 'error',
      comment:
        'Tests read jobs through the JobStore port (test/testkit/jobs.ts) and write raw ones with test/support/raw-jobs.ts; BullMQ itself only where it is the subject: the adapter\'s own tests, a job on one Cluster slot, BullMQ workers standing in for agents in the storm view, finished-job retention, stalled-job recovery, and the fault tier.',
      from: {
        path: '^test/',
        pathNot: [
          '^test/testkit/jobs[.]ts$',
          '^test/support/raw-jobs[.]ts$',
          '^test/int/adapters/jobstore/',
          '^test/int/adapters/redis/one-slot-connection[.]int[.]test[.]ts$',
          '^test/int/control/console/console-storm[.]int[.]test[.]ts$',
          '^test/int/workers/engine/finished-retention[.]int[.]test[.]ts$',
          '^test/int/workers/node-agent/node-agent[.]int[.]test[.]ts$',
          '^test/faults/',
        ],
      },
      to: { path: 'node_modules/bullmq/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import loop between test helpers.',
      from: { path: '^test/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: { path: '^test/|node_modules/(execa|bullmq)/|^(node:)?child_process$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.json'] },
  },
};
