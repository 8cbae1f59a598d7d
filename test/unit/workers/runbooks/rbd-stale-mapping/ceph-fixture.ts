import { readFileSync } from 'node:fs';

/** A captured command output from test/fixtures/ceph/ (see its README for where each comes from). */
export const cephFixture = (name: string): string => readFileSync(new URL(`../../../../fixtures/ceph/${name}`, import.meta.url), 'utf8');
