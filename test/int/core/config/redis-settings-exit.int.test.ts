import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';

// Invalid Redis settings (and an invalid LOG_LEVEL) stop every process at start with exit code 2 and a message naming the
// variable, before any connection is tried, and without echoing a password.

const REDIS_VARS = [
  'REDIS_URL',
  'REDIS_SENTINELS',
  'REDIS_SENTINEL_NAME',
  'REDIS_SENTINEL_PASSWORD',
  'REDIS_CLUSTER_NODES',
  'REDIS_USERNAME',
  'REDIS_PASSWORD',
  'REDIS_TLS',
  'REDIS_TLS_CA_FILE',
  'REDIS_ACK_REPLICAS',
  'REDIS_ACK_TIMEOUT_MS',
];

function run(entry: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const base: Record<string, string | undefined> = { ...process.env };
  for (const v of REDIS_VARS) delete base[v];
  const child = spawn(process.execPath, [entry], {
    env: {
      ...base,
      VOLUME_MEDIC_TOKEN: 'exit-test-token-0123456789',
      NODE_NAME: 'exit-node',
      PORT: '0',
      LISTEN_ADDRESS: '127.0.0.1',
      KUBE_WATCH: 'false',
      KUBERNETES_SERVICE_HOST: '',
      KUBECONFIG: '',
      SIGNING_KEYS_DIR: TEST_KEYS_DIR,
      ALLOW_PLAINTEXT_HTTP: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

describe('invalid Redis settings at start', () => {
  it('exit 2 naming the variable: a URL and sentinels at once, an http:// URL, a cluster node without a port', async () => {
    const [both, http, noPort, agent] = await Promise.all([
      run('src/control/main.ts', {
        REDIS_URL: 'redis://127.0.0.1:6379',
        REDIS_SENTINELS: '127.0.0.1:26379',
        REDIS_SENTINEL_NAME: 'mymaster',
        REDIS_PASSWORD: 'hunter2-never-shown',
      }),
      run('src/control/main.ts', { REDIS_URL: 'http://:hunter2-never-shown@127.0.0.1:6379' }),
      run('src/control/main.ts', { REDIS_CLUSTER_NODES: '127.0.0.1:7000,127.0.0.1' }),
      // The agents validate the same settings the same way.
      run('workers/node-agent/main.ts', { REDIS_SENTINELS: '127.0.0.1:26379' }),
    ]);
    expect(both.code, both.output).toBe(2);
    expect(both.output).toMatch(/REDIS_SENTINELS: set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES \(also set: REDIS_URL\)/);
    expect(http.code, http.output).toBe(2);
    expect(http.output).toMatch(/REDIS_URL: a redis:\/\/ or rediss:\/\/ URL/);
    expect(noPort.code, noPort.output).toBe(2);
    expect(noPort.output).toMatch(/REDIS_CLUSTER_NODES: expected host:port/);
    expect(agent.code, agent.output).toBe(2);
    expect(agent.output).toMatch(/REDIS_SENTINEL_NAME: required with REDIS_SENTINELS/);
    for (const r of [both, http, noPort, agent]) expect(r.output).not.toMatch(/hunter2/);
  });
});

describe('an invalid LOG_LEVEL at start', () => {
  it('every process exits 2 with one line naming LOG_LEVEL and the accepted levels, no stack trace', async () => {
    const entries = ['src/control/main.ts', 'workers/node-agent/main.ts', 'workers/cluster-worker/main.ts'];
    const results = await Promise.all(entries.map((e) => run(e, { LOG_LEVEL: 'verbose' })));
    for (const [i, r] of results.entries()) {
      expect(r.code, `${entries[i]}: ${r.output}`).toBe(2);
      const lines = r.output.trim().split('\n');
      expect(lines, r.output).toHaveLength(1);
      const line = JSON.parse(lines[0]!) as { level: number; msg: string };
      expect(line.level).toBe(60);
      expect(line.msg).toMatch(/LOG_LEVEL: .*"fatal"\|"error"\|"warn"\|"info"\|"debug"\|"trace"\|"silent".*\(got "verbose"\)/);
      expect(r.output).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
  });
});
