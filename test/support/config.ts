import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configParser } from '../../src/core/config/load.ts';
import type { Config } from '../../src/core/config/schema.ts';
import { EVERY_PROCESS } from '../../src/core/config/setting.ts';
import { TEST_KEYS_DIR } from './trust.ts';

/**
 * A STATE_DIR of this test process's own (not the machine's /var/lib/volume-medic): what agents
 * remember (finished work, accepted control records) does not leak between runs.
 */
const TEST_STATE_DIR = mkdtempSync(join(tmpdir(), 'vm-test-state-'));

/** Every process's settings, the schema built once here: tests make many configurations, and building it costs ~2 ms. */
const parse = configParser(EVERY_PROCESS);

/** A valid configuration for tests: defaults plus what the test says. */
export const testConfig = (overrides: Partial<Config>): Config =>
  parse({
    port: 0,
    listenAddress: '127.0.0.1',
    logLevel: 'silent',
    signingKeysDir: TEST_KEYS_DIR,
    stateDir: TEST_STATE_DIR,
    // A receiver with Kubernetes access would keep VolumeRemediation records on the test's fake API
    // server every 10 s, in whatever namespace its kubeconfig names: only the tests of the records
    // (test/int/control/records/) turn them on.
    records: false,
    ...overrides,
  });
