import type { RedisConnection } from './redis.ts';

// Many queues' keys read in chunks, a few chunks in flight: on a single Redis a chunk is one
// round trip (a pipeline or a script over many queues); on a Cluster a chunk is one queue (its
// keys share a hash tag, another slot than the next queue's) and more are in flight. The results
// come back in the order of `items`.

/** Chunk size and lanes for reads over many queues: given, or the topology's defaults. */
export function laneShape(
  redis: RedisConnection,
  o: { chunk?: number; parallel?: number },
  single: { chunk: number; parallel: number },
): { chunk: number; parallel: number } {
  const cluster = redis.isCluster;
  return {
    chunk: cluster ? 1 : Math.max(1, o.chunk ?? single.chunk),
    parallel: Math.max(1, o.parallel ?? (cluster ? 32 : single.parallel)),
  };
}

export async function inLanes<T, R>(items: readonly T[], shape: { chunk: number; parallel: number }, read: (chunk: T[]) => Promise<R[]>): Promise<R[]> {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += shape.chunk) chunks.push(items.slice(i, i + shape.chunk));
  const out: R[][] = new Array(chunks.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < chunks.length) {
      const i = next++;
      out[i] = await read(chunks[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(shape.parallel, chunks.length) }, lane));
  return out.flat();
}
