import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { z } from 'zod';
import type { Operator } from './operator.ts';

// The dashboard's sessions, kept server-side in Redis under the installation's prefix with a
// TTL. The browser holds only a random id (256 bits); Redis holds it hashed, so someone who can
// read Redis cannot sign in with what they read. Logging out deletes the record, so a copied
// cookie is worth nothing afterwards. Each session has its own CSRF token (synchronizer token),
// sent back in forms and by fetch in a header.

const sessionKey = (prefix: string, id: string): string => `${prefix}:vm:ui:session:${createHash('sha256').update(id, 'utf8').digest('base64url')}`;

const Session = z.object({
  username: z.string().min(1),
  uid: z.string().optional(),
  groups: z.array(z.string()),
  extra: z.record(z.string(), z.array(z.string())).optional(),
  via: z.enum(['token', 'proxy', 'insecure']),
  csrf: z.string().min(32),
  createdAt: z.string(),
});
export type UiSession = z.infer<typeof Session>;

/** Ids we issue: 43 base64url characters. Anything else is not looked up. */
const ID = /^[A-Za-z0-9_-]{43}$/;

export class SessionStore {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #ttlSeconds: number;
  readonly #now: () => Date;

  constructor(redis: RedisConnection, prefix: string, ttlSeconds: number, now: () => Date = () => new Date()) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#ttlSeconds = ttlSeconds;
    this.#now = now;
  }

  get ttlSeconds(): number {
    return this.#ttlSeconds;
  }

  async create(operator: Operator): Promise<{ id: string; session: UiSession }> {
    const id = randomBytes(32).toString('base64url');
    const session: UiSession = {
      username: operator.username,
      ...(operator.uid ? { uid: operator.uid } : {}),
      groups: operator.groups,
      ...(operator.extra ? { extra: operator.extra } : {}),
      via: operator.via,
      csrf: randomBytes(32).toString('base64url'),
      createdAt: this.#now().toISOString(),
    };
    await this.#redis.set(sessionKey(this.#prefix, id), JSON.stringify(session), 'EX', this.#ttlSeconds);
    return { id, session };
  }

  /** The session of an id; undefined when unknown, expired, deleted or not an id we issue. */
  async get(id: string | undefined): Promise<UiSession | undefined> {
    if (id === undefined || !ID.test(id)) return undefined;
    const raw = await this.#redis.get(sessionKey(this.#prefix, id));
    if (raw === null) return undefined;
    try {
      const parsed = Session.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  async delete(id: string | undefined): Promise<void> {
    if (id !== undefined && ID.test(id)) await this.#redis.del(sessionKey(this.#prefix, id));
  }
}

export const operatorOfSession = (s: UiSession): Operator => ({
  username: s.username,
  ...(s.uid ? { uid: s.uid } : {}),
  groups: s.groups,
  ...(s.extra ? { extra: s.extra } : {}),
  via: s.via,
});

/** Constant-time comparison of a submitted CSRF token with the session's. */
export function csrfMatches(session: UiSession, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(session.csrf, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
