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
      {
        // `npm run test:lab`: a real Linux kernel in qemu (dm-multipath over scsi_debug / iSCSI).
        // Minutes, not seconds; never part of `npm test`. The hook timeout covers a cold guest
        // image build in beforeAll; one guest at a time on a 2-core machine.
        test: {
          name: 'lab',
          include: ['test/lab/**/*.lab.test.ts'],
          environment: 'node',
          testTimeout: 600_000,
          hookTimeout: 1_800_000,
          maxWorkers: 1,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
      {
        // `npm run test:faults`: Redis going away under a real Alertmanager, agents and receivers
        // SIGKILLed mid-work, fuzzing every route, hung host commands, a rolling upgrade from the
        // previous release under load. A few minutes; one file at a time because they stop and
        // start servers.
        test: {
          name: 'faults',
          include: ['test/faults/**/*.fault.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-redis.ts'],
          testTimeout: 180_000,
          hookTimeout: 60_000,
          maxWorkers: 1,
          fileParallelism: false,
          sequence: { groupOrder: 3 },
        },
      },
      {
        // `npm run test:image`: the image `npm run image` builds (VM_IMAGE_LAYOUT), or one built
        // here, unpacked and run under unshare + chroot (root only) against a real Redis; pushed
        // to a local registry when docker-registry and skopeo are there. Minutes; never in `npm test`.
        test: {
          name: 'image',
          include: ['test/image/**/*.image.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-redis.ts'],
          testTimeout: 300_000,
          hookTimeout: 900_000,
          maxWorkers: 1,
          fileParallelism: false,
          sequence: { groupOrder: 4 },
        },
      },
    ],
  },
});
