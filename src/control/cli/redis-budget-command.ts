import { z } from 'zod';
import type { ApiClient } from './api-client.ts';
import { read } from './answers.ts';
import { type Opts, type Out, UsageError } from './command-kit.ts';
import { table } from './table.ts';

// `volume-medic redis-budget`: the nodes restricted for going over their Redis memory budget
// (src/control/fleet/node-redis-budget.ts), and `redis-budget release <node> --why T`, which lets
// one write again (verb `reset breakers`).

const Restricted = z.looseObject({
  node: z.string(),
  at: z.string(),
  usedBytes: z.number(),
  removed: z.looseObject({ keys: z.number(), bytes: z.number() }).nullish(),
});
const ListAnswer = z.looseObject({ budgetBytes: z.number(), restricted: z.array(Restricted) });
const ReleaseAnswer = z.looseObject({ released: Restricted.omit({ node: true }).nullable(), recordedAs: z.string() });

const mib = (b: number): string => `${(b / 1_048_576).toFixed(1)} MiB`;

export async function redisBudget(api: ApiClient, args: string[], o: Opts, out: Out): Promise<void> {
  if (args[0] === 'release') {
    const node = args[1];
    if (!node || !o.why) throw new UsageError('redis-budget release <node> --why TEXT');
    const raw = await api.post('/v1/redis-budget/release', { node, why: o.why });
    if (o.json) return out(JSON.stringify(raw, null, 2));
    const r = read('POST /v1/redis-budget/release', ReleaseAnswer, raw);
    return out(
      r.released
        ? `${node}: released by ${r.recordedAs} (restricted since ${r.released.at}, ${mib(r.released.usedBytes)}); its Redis user may write again`
        : `${node}: was not restricted`,
    );
  }
  if (args[0] !== undefined) throw new UsageError('redis-budget [release <node> --why TEXT]');
  const raw = await api.get('/v1/redis-budget');
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('GET /v1/redis-budget', ListAnswer, raw);
  out(`budget per node: ${mib(r.budgetBytes)}`);
  if (r.restricted.length === 0) return out('no node is restricted');
  out(
    table(
      ['node', 'restricted since', 'held', 'removed'],
      r.restricted.map((x) => [x.node, x.at, mib(x.usedBytes), x.removed ? `${x.removed.keys} keys, ${mib(x.removed.bytes)}` : '']),
      100,
    ),
  );
}
