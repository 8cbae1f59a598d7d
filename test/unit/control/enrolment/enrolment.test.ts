import { describe, expect, it } from 'vitest';
import { Enrolment } from '../../../../src/control/enrolment/enrolment.ts';
import { TokenIdentities } from '../../../../src/control/enrolment/token-identity.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { GenerationTable } from '../../../../src/core/trust/key-generations.ts';

// Enrolment's decisions with the API server, Redis users and generations as ports: the user of a
// node whose credentials were revoked while it enrolled is not left in Redis, and the process's
// own table follows the generation enrolment found.

const ROOT = Buffer.alloc(32, 7);
const POD = {
  username: 'system:serviceaccount:vm:agent',
  groups: [] as string[],
  extra: {
    'authentication.kubernetes.io/pod-name': ['agent-a'],
    'authentication.kubernetes.io/pod-uid': ['uid-a'],
    'authentication.kubernetes.io/node-name': ['node-a'],
  },
};

function setup(o: { generationAfterEnsure?: number; nodeUid?: string | undefined; tokenNodeUid?: string } = {}) {
  const calls: string[] = [];
  let generation = 0;
  const table = new GenerationTable();
  const identities = new TokenIdentities({
    ports: {
      reviewToken: async () => ({
        authenticated: true as const,
        user: { ...POD, extra: { ...POD.extra, ...(o.tokenNodeUid ? { 'authentication.kubernetes.io/node-uid': [o.tokenNodeUid] } : {}) } },
      }),
      podOf: async () => ({ uid: 'uid-a', nodeName: 'node-a' }),
    },
    nodeAgents: ['vm/agent'],
    clusterWorkers: [],
  });
  const enrolment = new Enrolment({
    roots: { signing: { role: 'receiver', kid: 'k', key: ROOT }, verify: new Map([['receiver.k', ROOT]]) },
    identities,
    nodes: { uidOf: async () => ('nodeUid' in o ? o.nodeUid : 'node-uid-1') },
    generations: { atEnrolment: async () => generation, current: async () => generation },
    table,
    redisUsers: {
      userName: (n) => `u.${n}`,
      ensure: async (n) => {
        calls.push(`ensure ${n}`);
        if (o.generationAfterEnsure !== undefined) generation = o.generationAfterEnsure;
      },
      remove: async (n) => {
        calls.push(`remove ${n}`);
      },
    },
  });
  return { enrolment, calls, table, setGeneration: (g: number) => (generation = g) };
}

describe('enrolment of a node agent', () => {
  it("deletes the user it just made when the node's credentials were revoked meanwhile, and asks the agent to enrol again", async () => {
    const { enrolment, calls } = setup({ generationAfterEnsure: 1 });
    expect(await enrolment.enrol('t', { as: 'node-agent', node: 'node-a' })).toMatchObject({
      ok: false,
      status: 503,
      error: expect.stringContaining('revoked while it enrolled'),
    });
    expect(calls).toEqual(['ensure node-a', 'remove node-a']);
  });

  it('hands out the keys of the generation it finds, and its own sealing follows at once', async () => {
    const { enrolment, table, setGeneration } = setup();
    setGeneration(4);
    const out = await enrolment.enrol('t', { as: 'node-agent', node: 'node-a' });
    expect(out.ok && Object.keys(out.answer.keys)).toEqual(['receiver.k.g4']);
    expect(table.of(nodeQueueName('node-a'))).toBe(4);
  });

  it('refuses a node the API server does not know, and a token issued on an earlier Node of that name', async () => {
    expect(await setup({ nodeUid: undefined }).enrolment.enrol('t', { as: 'node-agent', node: 'node-a' })).toMatchObject({
      ok: false,
      status: 403,
      error: expect.stringContaining('not known to the API server'),
    });
    expect(await setup({ tokenNodeUid: 'node-uid-0' }).enrolment.enrol('t', { as: 'node-agent', node: 'node-a' })).toMatchObject({
      ok: false,
      status: 403,
      error: expect.stringContaining('earlier Node'),
    });
    expect(await setup({ tokenNodeUid: 'node-uid-1' }).enrolment.enrol('t', { as: 'node-agent', node: 'node-a' })).toMatchObject({ ok: true });
  });
});
