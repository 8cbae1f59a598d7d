import { describe, expect, it } from 'vitest';
import { drainOf } from '../../../../src/core/coordination/drain.ts';

const terminating = { namespace: 'shop', name: 'db-0', deletionTimestamp: '2026-12-07T12:59:00Z' };
const running = { namespace: 'shop', name: 'web-1' };

describe('a drain', () => {
  it('is a cordoned node with a pod terminating on it', () => {
    expect(drainOf('worker-1', { unschedulable: true }, [running, terminating])).toBe('worker-1 is cordoned and 1 pod(s) on it are terminating: shop/db-0');
  });

  it('is not a cordoned node with nothing terminating (set aside, or a drain that finished)', () => {
    expect(drainOf('worker-1', { unschedulable: true }, [running])).toBeUndefined();
    expect(drainOf('worker-1', { unschedulable: true }, [])).toBeUndefined();
  });

  it('is not a pod terminating on a schedulable node (a rollout)', () => {
    expect(drainOf('worker-1', {}, [terminating])).toBeUndefined();
    expect(drainOf('worker-1', { unschedulable: false }, [terminating])).toBeUndefined();
  });

  it('names three pods and counts the rest', () => {
    const pods = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ ...terminating, name }));
    expect(drainOf('worker-1', { unschedulable: true }, pods)).toBe(
      'worker-1 is cordoned and 5 pod(s) on it are terminating: shop/a, shop/b, shop/c and 2 more',
    );
  });
});
