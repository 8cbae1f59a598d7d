import { describe, expect, it } from 'vitest';
import type { Host } from '../../../../../workers/host/host.ts';
import { createRealHost } from '../../../../../workers/host/real-host.ts';
import { probeArgv, probeMaps } from '../../../../../workers/runbooks/residual-multipath-cleanup/probe.ts';

// Read probes against processes that never answer, on the real Host (process groups, SIGTERM,
// SIGKILL). The host kernel has no device-mapper, so each probe's argv is swapped for a stand-in
// with the same fate: one that hangs and ignores SIGTERM (a dead map with queue_if_no_path), one
// that fails at once with EIO (a dead map without queueing).

const DEADLINE_MS = 1_000;
const GRACE_MS = 300;

function standInHost(fates: Record<string, 'hang' | 'eio'>): Host {
  const real = createRealHost({ killGraceMs: GRACE_MS });
  return {
    ...real,
    run(argv, options) {
      const dm = /dev\/(dm-\d+)$/.exec(argv[1] ?? '')?.[1] ?? '';
      const fate = fates[dm];
      if (argv[0] !== 'dd' || !fate) return real.run(argv, options);
      return real.run(
        fate === 'hang' ? ['sh', '-c', 'trap "" TERM; exec sleep 1000'] : ['sh', '-c', `echo "dd: error reading '/dev/${dm}': Input/output error" >&2; exit 1`],
        options,
      );
    },
  };
}

describe('read probes of dead maps', () => {
  it('abandons four hanging probes in about one deadline, not four', async () => {
    const host = standInHost({ 'dm-1': 'hang', 'dm-2': 'hang', 'dm-3': 'hang', 'dm-4': 'hang', 'dm-5': 'eio' });
    const started = performance.now();
    const results = await probeMaps(host, ['dm-1', 'dm-2', 'dm-3', 'dm-4', 'dm-5'], DEADLINE_MS);
    const elapsed = performance.now() - started;

    for (const dm of ['dm-1', 'dm-2', 'dm-3', 'dm-4']) {
      expect(results.get(dm)).toMatchObject({ outcome: 'timed-out', exitCode: null, stuckPids: [] });
      expect(results.get(dm)!.durationMs).toBeGreaterThanOrEqual(DEADLINE_MS);
    }
    expect(results.get('dm-5')).toMatchObject({ outcome: 'io-error', detail: expect.stringMatching(/Input\/output error/) });
    // One deadline + the SIGTERM grace + a little: sequential probes would take more than 4 s.
    expect(elapsed).toBeLessThan(DEADLINE_MS + GRACE_MS + 1_200);
    console.log(`5 probes (4 hanging) with a ${DEADLINE_MS} ms deadline took ${Math.round(elapsed)} ms`);
  });

  it('leaves no probe process behind', async () => {
    const host = standInHost({ 'dm-7': 'hang' });
    await probeMaps(host, ['dm-7'], 500);
    const ps = await createRealHost().run(['sh', '-c', 'ps -eo args | grep -c "^sleep 1000$" || true']);
    expect(ps.stdout.trim()).toBe('0');
  });

  it('probes with a direct 1 MiB read into /dev/null, under the host root', () => {
    expect(probeArgv(createRealHost({ root: '/host' }), 'dm-3')).toEqual(['dd', 'if=/host/dev/dm-3', 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct']);
    expect(probeArgv(createRealHost({ root: '/host', nsenter: true }), 'dm-3')[1]).toBe('if=/dev/dm-3');
    expect(() => probeArgv(createRealHost(), 'dm-3; reboot')).toThrow(/not a valid dm device name/);
  });
});
