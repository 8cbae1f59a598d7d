// `npm start`: the whole thing on one machine, for trying it out. The receiver plus a node
// agent for this machine, every runbook forced to dry-run (plans and reports, changes nothing).
// Redis: REDIS_URL if set; else 127.0.0.1:6379 if it answers; else a private redis-server on a
// free port, started here and stopped on exit.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ConfigError, loadConfig } from '../src/config/load.ts';
import { isNodeName } from '../src/catalogue/names.ts';
import { createLogger } from '../src/observability/logger.ts';
import { startReceiver } from '../src/receiver.ts';
import { createNodeAgent } from '../workers/node-agent/agent.ts';
import { defaultNodeRegistry } from '../workers/node-agent/registry.ts';

const log = createLogger('dev');

async function answers(url: string): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

const freePort = (): Promise<number> => new Promise((resolve, reject) => {
  const s = createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address() as { port: number };
    s.close(() => resolve(port));
  });
});

async function redisFor(env: NodeJS.ProcessEnv): Promise<{ url: string; child?: ChildProcess }> {
  if (env['REDIS_URL']) {
    if (!(await answers(env['REDIS_URL']))) throw new ConfigError(`REDIS_URL=${env['REDIS_URL']} does not answer`);
    return { url: env['REDIS_URL'] };
  }
  if (await answers('redis://127.0.0.1:6379')) {
    log.info('using the Redis that answers on 127.0.0.1:6379 (set REDIS_URL to choose another)');
    return { url: 'redis://127.0.0.1:6379' };
  }
  if (spawnSync('redis-server', ['--version']).error) {
    throw new ConfigError('no Redis configured or answering on 127.0.0.1:6379, and redis-server is not installed (Debian: apt-get install redis-server)');
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'volume-medic-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await answers(url)); i++) await new Promise((r) => setTimeout(r, 50));
  log.info({ url }, 'no Redis configured and none answering locally: started a private redis-server (stopped on exit, keeps nothing)');
  return { url, child };
}

try {
  const redis = await redisFor(process.env);
  const nodeName = process.env['NODE_NAME'] || hostname().toLowerCase();
  if (!isNodeName(nodeName)) throw new ConfigError(`this machine's name "${nodeName}" is not a valid node name; set NODE_NAME`);
  const config = { ...loadConfig({ ...process.env, REDIS_URL: redis.url, NODE_NAME: nodeName }), defaultMode: 'dry-run' as const, runbookModes: {} };
  log.level = config.logLevel;
  const receiver = await startReceiver(config, { log: log.child({ component: 'receiver' }) });
  const agent = createNodeAgent({ config, registry: defaultNodeRegistry(config, log), log: log.child({ component: 'node-agent', node: nodeName }) });
  log.info({ receiver: receiver.url, node: nodeName, mode: 'dry-run' }, `volume-medic is running. Try: curl -s -XPOST ${receiver.url}/v1/explain?source=alertmanager -d @test/fixtures/alertmanager/kube-node-not-ready-resolved.json`);
  const stop = async (): Promise<void> => {
    await receiver.close();
    await agent.close();
    redis.child?.kill('SIGTERM');
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
} catch (err) {
  if (err instanceof ConfigError) {
    log.fatal(err.message);
    process.exit(2);
  }
  throw err;
}
