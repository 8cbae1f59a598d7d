import { defineConfig } from 'vitest/config';

// One project per test tier (CONVENTIONS 13). `npm test` runs unit + integration;
// the lab tier and benchmarks have their own npm scripts because they need a guest kernel or minutes.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          // Projects with different maxWorkers must run as separate groups: unit first, then integration.
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/int/**/*.int.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-redis.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Integration files start servers and Redis workers; keep them from starving each other on 2 cores.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
