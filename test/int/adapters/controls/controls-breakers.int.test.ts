import { Redis } from 'ioredis';
import { breakerContract } from '../../../support/breaker-contract.ts';
import { redisUrl } from '../../../support/redis.ts';

// The breakers' contract against a single Redis; test/int/adapters/redis/redis-cluster.int.test.ts runs the same against a Cluster.
breakerContract('single', () => new Redis(redisUrl()));
