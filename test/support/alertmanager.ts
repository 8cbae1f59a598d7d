import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/lib/local-redis.ts';
import { isExecutable } from './executable.ts';

// A real Prometheus Alertmanager (Debian's `prometheus-alertmanager`) for integration tests:
// started on loopback with clustering off, its own storage in a temp dir, and a webhook
// receiver pointing at volume-medic. Stopped by the test; a process-exit hook kills any that a
// crashed test left behind.

export const ALERTMANAGER_BIN = process.env['ALERTMANAGER_BIN'] ?? '/usr/bin/prometheus-alertmanager';

export function alertmanagerAvailable(): boolean {
  return isExecutable(ALERTMANAGER_BIN);
}

export interface AlertmanagerOptions {
  /** Where the webhook receiver posts (volume-medic's /v1/alertmanager). */
  webhookUrl: string;
  /** Bearer token Alertmanager sends (`http_config.authorization.credentials`). */
  token: string;
  /** Route timings; short so a test sees a notification within a second or two. */
  groupWait?: string;
  groupInterval?: string;
  /** Only applies to alerts posted without endsAt (Prometheus always sets it; these tests do too). */
  resolveTimeout?: string;
}

export interface RunningAlertmanager {
  url: string;
  /** Everything Alertmanager logged so far (debug level), for failure messages. */
  log(): string;
  /** POST /api/v2/alerts. */
  postAlerts(alerts: PostableAlert[]): Promise<void>;
  /** GET /api/v2/alerts with a label matcher filter such as `node="worker-1"`. */
  alerts(filter?: string): Promise<GettableAlert[]>;
  /** Sum of a metric from Alertmanager's own /metrics, over series matching the labels. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

export interface PostableAlert {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt?: string;
  endsAt?: string;
  generatorURL?: string;
}

interface GettableAlert extends PostableAlert {
  fingerprint: string;
  status: { state: string };
  receivers: { name: string }[];
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

const LOG_CAP = 256 * 1024;

export async function startAlertmanager(opts: AlertmanagerOptions): Promise<RunningAlertmanager> {
  const dir = await mkdtemp(join(tmpdir(), 'vm-alertmanager-'));
  const config = {
    global: { resolve_timeout: opts.resolveTimeout ?? '5m' },
    route: {
      receiver: 'volume-medic',
      group_by: ['alertname', 'node'],
      group_wait: opts.groupWait ?? '1s',
      group_interval: opts.groupInterval ?? '1s',
      repeat_interval: '1h',
    },
    receivers: [
      {
        name: 'volume-medic',
        webhook_configs: [
          {
            url: opts.webhookUrl,
            send_resolved: true,
            http_config: { authorization: { type: 'Bearer', credentials: opts.token } },
          },
        ],
      },
    ],
  };
  // JSON is YAML: no quoting surprises in URLs or tokens.
  const configFile = join(dir, 'alertmanager.yml');
  await writeFile(configFile, JSON.stringify(config, null, 2));

  let lastError = '';
  // A free port can be taken between freePort() and bind(): try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let output = '';
    const child = spawn(
      ALERTMANAGER_BIN,
      [
        `--config.file=${configFile}`,
        `--storage.path=${join(dir, `data-${attempt}`)}`,
        `--web.listen-address=127.0.0.1:${port}`,
        `--web.external-url=${url}`,
        '--cluster.listen-address=',
        '--log.level=debug',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    running.add(child);
    const collect = (chunk: Buffer) => {
      if (output.length < LOG_CAP) output += chunk.toString('utf8');
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    let exited = false;
    const exitedP = new Promise<void>((resolve) =>
      child.once('exit', () => {
        exited = true;
        running.delete(child);
        resolve();
      }),
    );
    child.once('error', (err) => {
      output += `\nspawn error: ${err.message}`;
    });

    const deadline = Date.now() + 15_000;
    let ready = false;
    while (!exited && Date.now() < deadline) {
      try {
        const r = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) });
        if (r.ok) {
          ready = true;
          break;
        }
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    if (!ready) {
      child.kill('SIGKILL');
      await exitedP;
      lastError = `Alertmanager on ${url} did not become ready (exited: ${exited}).\n${output.slice(-4000)}`;
      continue;
    }

    const am: RunningAlertmanager = {
      url,
      log: () => output,
      async postAlerts(alerts) {
        const r = await fetch(`${url}/api/v2/alerts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(alerts),
        });
        if (!r.ok) throw new Error(`POST ${url}/api/v2/alerts answered ${r.status}: ${await r.text()}`);
      },
      async alerts(filter) {
        const q = filter ? `?filter=${encodeURIComponent(filter)}` : '';
        const r = await fetch(`${url}/api/v2/alerts${q}`);
        if (!r.ok) throw new Error(`GET ${url}/api/v2/alerts answered ${r.status}: ${await r.text()}`);
        return (await r.json()) as GettableAlert[];
      },
      async metric(name, labels = {}) {
        const r = await fetch(`${url}/metrics`);
        return sumMetric(await r.text(), name, labels);
      },
      async stop() {
        if (!exited) {
          child.kill('SIGTERM');
          const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exitedP;
          clearTimeout(killer);
        }
        await rm(dir, { recursive: true, force: true });
      },
    };
    return am;
  }
  await rm(dir, { recursive: true, force: true });
  throw new Error(lastError);
}

/** Sum of the samples of `name` whose labels include all of `labels` (Prometheus text format). */
export function sumMetric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) have[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` returns a truthy value; on timeout throws with `what` and `context()`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number, context: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr = '';
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      lastErr = (err as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${lastErr})` : ''}\n${context()}`);
    }
    await sleep(100);
  }
}
