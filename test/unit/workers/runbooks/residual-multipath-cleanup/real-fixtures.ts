import { readFileSync } from 'node:fs';

// Real captures from the lab guest (test/fixtures/multipath/<scenario>/, see its index.json).
export type Scenario = 'healthy' | 'all-paths-failed' | 'one-path-failed' | 'iscsi-lun-removed';

export function captured(scenario: Scenario, file: string): string {
  return readFileSync(new URL(`../../../../fixtures/multipath/${scenario}/${file}`, import.meta.url), 'utf8');
}
