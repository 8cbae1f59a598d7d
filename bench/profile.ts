// `node bench/profile.ts [one|grouped|event] [unique|repeat|varied]`: one scenario of the throughput
// bench (varied: the repeat's incidents in a different body each time) against the real receiver,
// reporting what is stable on a shared machine: the receiver's own CPU per request (utime+stime
// from /proc over 5 s of load), its peak RSS, Redis's and the load generator's CPU per request and
// Redis's per-command cost. TARGET=bare measures the bare endpoint instead, TARGET=addbulk the
// plain-addBulk reference (servers/addbulk.ts); NODE_FLAGS: V8 flags for the server (e.g. a heap
// limit); PROF=<dir>: the server also writes a V8 CPU profile there (open it in Chrome
// DevTools). CONNECTIONS: concurrent senders (default 20, as in the bench). PREFILL=<seconds>:
// new 50-alert groups for that long before the measurement, so the receiver's memos are full as
// in a process that has run for a while (the bench's later sections meet it that way).
// Used to measure each hot-path change (commit messages carry the figures).
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { startChild } from '../test/support/child.ts';
import { fill, groupedAlerts, oneAlert, rebootedEvent } from '../test/testkit/load-payloads.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { writeSigningKeys } from '../scripts/lib/signing-keys.ts';

// The receiver seals jobs as deployed (it does not start without keys).
process.env['SIGNING_KEYS_DIR'] ||= writeSigningKeys(undefined);

const which = process.argv[2] === 'grouped' || process.argv[2] === 'event' ? process.argv[2] : 'one';
const mode = process.argv[3] === 'repeat' || process.argv[3] === 'varied' ? process.argv[3] : 'unique';
const prof = process.env['PROF'];
// The bench's 20 senders by default; CONNECTIONS=50 shows the receiver with more requests to work on while Redis answers.
const connections = Number(process.env['CONNECTIONS'] ?? 20);

const redis = await startPrivateRedis();
const target = process.env['TARGET'] === 'bare' || process.env['TARGET'] === 'addbulk' ? process.env['TARGET'] : 'receiver';
const receiver = startChild(
  new URL(`./servers/${target}.ts`, import.meta.url).pathname,
  { REDIS_URL: redis.url, QUEUE_PREFIX: 'bench', LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info' },
  {
    stdout: 'ignore',
    execArgv: [...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []), ...(process.env['NODE_FLAGS'] ?? '').split(' ').filter(Boolean)],
  },
);
const admin = new Redis(redis.url);
try {
  const url = await receiver.waitLine('READY ');
  const p = which === 'one' ? oneAlert() : which === 'event' ? rebootedEvent() : groupedAlerts(50);
  const salt = Date.now().toString(36);
  const fixed = fill(p, `${salt}r`);
  let n = 0;
  await fetch(url + p.path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: fixed });
  const load = (path: string, seconds: number, body: () => string) =>
    autocannon({
      url: url + path,
      connections,
      duration: seconds,
      requests: [{ method: 'POST', headers: { 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: body() }) }],
    });
  const run = (seconds: number) =>
    load(p.path, seconds, () => (mode === 'repeat' ? fixed : mode === 'varied' ? p.vary(fixed, n++) : fill(p, `${salt}u${n++}`)));
  // Redis's whole process (commands, scripts, its socket I/O), from INFO cpu.
  const redisCpuMs = async (): Promise<number> => (await redisCpu(admin)).processMs;
  await run(1);
  if (process.env['PREFILL']) {
    const g = groupedAlerts(50);
    let m = 0;
    await load(g.path, Number(process.env['PREFILL']), () => fill(g, `${salt}p${m++}`));
  }
  await admin.config('RESETSTAT');
  const c0 = receiver.cpuMs();
  const r0 = await redisCpuMs();
  const g0 = process.cpuUsage();
  let rssPeak = 0;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, receiver.rssMiB())), 100);
  const r = await run(5);
  clearInterval(sampler);
  const g1 = process.cpuUsage(g0);
  const c1 = receiver.cpuMs();
  const r1 = await redisCpuMs();
  console.log(`${which} ${mode}: ${Math.round(r.requests.average)} req/s, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}`);
  const per = (ms: number): number => Math.round((ms * 1000) / r.requests.total);
  const [rec, red, gen] = [per(c1 - c0), per(r1 - r0), per((g1.user + g1.system) / 1000)];
  console.log(`receiver CPU per request: ${rec} us; receiver RSS peak ${Math.round(rssPeak)} MiB`);
  // The machine's whole budget per request: what the ratio to the bare endpoint is made of.
  console.log(`redis-server CPU per request: ${red} us; load generator (autocannon, this process): ${gen} us; all three: ${rec + red + gen} us`);
  console.log(
    (await admin.info('commandstats'))
      .split('\n')
      .filter((l) => /cmdstat_(evalsha|hmget)/.test(l))
      .join('\n'),
  );
} finally {
  admin.disconnect();
  await receiver.kill('SIGTERM');
  await redis.destroy();
}
