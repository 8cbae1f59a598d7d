import { defineConfig } from 'vitest/config';

// Until package.json has it (`npm run test:faults` = `vitest run --project faults`), the fault
// tier runs with `npx vitest run --config test/faults/vitest.config.ts`. Minutes, not seconds:
// they stop Redis, kill processes and fuzz thousands of requests. One file at a time on 2 cores.
export default defineConfig({
  test: {
    name: 'faults',
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/faults/**/*.fault.test.ts'],
    environment: 'node',
    globalSetup: ['test/support/global-redis.ts'],
    testTimeout: 180_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
    fileParallelism: false,
  },
});
