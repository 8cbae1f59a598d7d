import { announce, answerHeapRequests } from '../../test/support/child.ts';
import { breakerSettingsFromEnv } from './breaker-env.ts';
import { parseConfig } from '../../src/core/config/load.ts';
import { startReceiver } from '../../src/control/receiver.ts';
import { answerStatsRequests } from '../lib/server-stats.ts';

// The real receiver (src/control/receiver.ts) on a free loopback port, configured from the environment
// the parent passes (REDIS_URL or REDIS_SENTINELS + REDIS_SENTINEL_NAME, QUEUE_PREFIX, LOG_LEVEL). Its logs go to the parent's choice of
// stdout sink; the first line it prints itself is READY <url>.

const config = parseConfig('receiver', {
  port: 0,
  listenAddress: '127.0.0.1',
  ...(process.env['REDIS_CLUSTER_NODES']
    ? { redisClusterNodes: process.env['REDIS_CLUSTER_NODES'].split(',') }
    : process.env['REDIS_SENTINELS']
      ? { redisSentinels: process.env['REDIS_SENTINELS'].split(','), redisSentinelName: process.env['REDIS_SENTINEL_NAME'] }
      : { redisUrl: process.env['REDIS_URL'] }),
  queuePrefix: process.env['QUEUE_PREFIX'],
  signingKeysDir: process.env['SIGNING_KEYS_DIR'],
  logLevel: process.env['LOG_LEVEL'] ?? 'warn',
  ...(process.env['ENQUEUE_TIMEOUT_MS'] ? { enqueueTimeoutMs: process.env['ENQUEUE_TIMEOUT_MS'] } : {}),
  ...(process.env['REDIS_ACK_REPLICAS'] ? { redisAckReplicas: process.env['REDIS_ACK_REPLICAS'] } : {}),
  ...(process.env['VOLUME_MEDIC_TOKEN'] ? { tokens: [process.env['VOLUME_MEDIC_TOKEN']] } : {}),
  // bench/enrolment.ts: enrolment against the fake API server named by KUBECONFIG.
  ...(process.env['OPERATOR_AUTH'] ? { operatorAuth: process.env['OPERATOR_AUTH'] } : {}),
  ...(process.env['ENROL_NODE_AGENTS'] ? { enrolNodeAgents: process.env['ENROL_NODE_AGENTS'].split(',') } : {}),
  ...(process.env['REDIS_NODE_USERS'] ? { redisNodeUsers: process.env['REDIS_NODE_USERS'] } : {}),
  // bench/fleet-paths.ts: HTTPS, and controls sealed with the control key pair (enrolled agents hold no root).
  ...(process.env['HTTP_KEEP_ALIVE_SECONDS'] ? { httpKeepAliveSeconds: process.env['HTTP_KEEP_ALIVE_SECONDS'] } : {}),
  ...(process.env['TLS_CERT_FILE'] ? { tlsCertFile: process.env['TLS_CERT_FILE'], tlsKeyFile: process.env['TLS_KEY_FILE'] } : {}),
  ...(process.env['CONTROL_SIGNING_KEY_FILE']
    ? { controlSigningKeyFile: process.env['CONTROL_SIGNING_KEY_FILE'], controlVerifyCertFile: process.env['CONTROL_VERIFY_CERT_FILE'] }
    : {}),
  // The breakers' caps, as the agents get them (the soak turns them off; the receiver counts the
  // nodes of the jobs it stores towards the storm breaker and takes enrolled agents' slots).
  ...breakerSettingsFromEnv(),
});
const receiver = await startReceiver(config);
// Started with --expose-gc (test/int/control/receiver/breaker-flood.int.test.ts): its heap after full collections, on request.
answerHeapRequests();
answerStatsRequests(receiver.server);
announce(`READY ${receiver.url}`);
process.on('SIGTERM', () => void receiver.close().then(() => process.exit(0)));
