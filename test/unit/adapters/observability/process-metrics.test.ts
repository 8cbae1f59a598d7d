import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildInfo } from '../../../../src/adapters/observability/build-info.ts';
import { createReceiverMetrics } from '../../../../src/adapters/observability/metrics.ts';
import { registerProcessMetrics } from '../../../../src/adapters/observability/process-metrics.ts';

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('process metrics', () => {
  it('uses the standard names dashboards expect, without a prefix', async () => {
    const text = await createReceiverMetrics().registry.metrics();
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_version_info',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}(\\{[^}]*\\})? `, 'm'));
    }
    expect(text).not.toMatch(/^volume_medic_receiver_/m);
  });

  it('exports volume_medic_build_info 1 with the package version, the revision and the Node version', async () => {
    const registry = new Registry();
    registerProcessMetrics(registry, buildInfo({ VOLUME_MEDIC_REVISION: '3f2c9e1' }));
    expect(await registry.metrics()).toContain(`volume_medic_build_info{version="${PACKAGE_VERSION}",commit="3f2c9e1",node_version="${process.version}"} 1`);
  });

  it('says revision="unknown" when the build did not set one, or set something that is not a revision', () => {
    expect(buildInfo({}).revision).toBe('unknown');
    expect(buildInfo({ VOLUME_MEDIC_REVISION: '' }).revision).toBe('unknown');
    expect(buildInfo({ VOLUME_MEDIC_REVISION: 'a"b\nc' }).revision).toBe('unknown');
    expect(buildInfo({ VOLUME_MEDIC_REVISION: ' v0.1.0-rc.1 ' }).revision).toBe('v0.1.0-rc.1');
    expect(buildInfo({}).version).toBe(PACKAGE_VERSION);
  });
});
