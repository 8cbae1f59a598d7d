import { Config } from '../../src/config/schema.ts';
import { TEST_KEYS_DIR } from './trust.ts';

/** A valid configuration for tests: defaults plus what the test says. */
export const testConfig = (overrides: Partial<Config>): Config => Config.parse({ port: 0, listenAddress: '127.0.0.1', logLevel: 'silent', signingKeysDir: TEST_KEYS_DIR, ...overrides });
