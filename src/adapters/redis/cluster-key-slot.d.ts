// cluster-key-slot ships no types: the one function we call. It is the slot function ioredis
// routes Cluster commands by (the same pinned version, one copy in node_modules).
declare module 'cluster-key-slot' {
  /** The Redis Cluster slot (0-16383) of a key: of its hash tag when it has a non-empty one. */
  export default function calculateSlot(key: string): number;
}
