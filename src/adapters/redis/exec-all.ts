import type { ChainableCommander } from 'ioredis';

/**
 * Sends a pipeline (one write, one round trip) and returns its replies in order, or throws the
 * first error in them, or when the answers are missing (a connection that dropped meanwhile):
 * a caller deciding on them must never read a half answer as "nothing there".
 */
export async function execAll(p: ChainableCommander): Promise<unknown[]> {
  const n = p.length;
  const replies = (await p.exec()) ?? [];
  if (replies.length !== n) throw new Error(`a pipeline of ${n} commands got ${replies.length} answers`);
  return replies.map(([err, v]) => {
    if (err) throw err;
    return v;
  });
}
