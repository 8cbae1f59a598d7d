import { parseArgs } from 'node:util';
import { redisSecrets, secretsYaml } from './redis-acl.ts';

// Fresh Redis credentials for an installation, as Secrets on stdout (nothing is written to disk):
//   node scripts/deploy/redis-secrets.ts | kubectl apply -f -
// Options: --prefix (QUEUE_PREFIX, default volume-medic), --address (default the bundled Redis,
// volume-medic-redis.volume-medic.svc:6379), --tls (rediss:// URLs), --namespace (volume-medic).
// With your own Redis, load the users of volume-medic-redis-acl's users.acl into it (ACL LOAD or
// ACL SETUSER) and point --address at it. Running it again makes new passwords for every process:
// apply, then restart Redis and the three workloads.

const { values } = parseArgs({
  options: {
    prefix: { type: 'string', default: 'volume-medic' },
    address: { type: 'string', default: 'volume-medic-redis.volume-medic.svc:6379' },
    namespace: { type: 'string', default: 'volume-medic' },
    tls: { type: 'boolean', default: false },
  },
});
process.stdout.write(secretsYaml(redisSecrets({ prefix: values.prefix, address: values.address, namespace: values.namespace, tls: values.tls })));
