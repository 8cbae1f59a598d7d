import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, toyRunbook } from '../../../support/controls-harness.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';

// The CLI as an operator runs it: a separate process (`node src/control/cli/main.ts`, what the package's
// `bin` runs), URL from the environment or flags, the operator's identity from their kubeconfig
// (a token of user oncall-ana, reviewed by the fake API server's TokenReview) or --token, against
// a real receiver, a real Redis and a node agent.

const exec = promisify(execFile);
const TOKEN = 'cli-test-token-0123456789abcdef';
const silent = createLogger('test', 'silent');

describe('the volume-medic CLI against a real receiver', () => {
  const prefix = uniquePrefix('cli');
  let receiver: Receiver;
  let agent: RunbookWorker;
  let redis: Redis;
  let ops: Operators;
  let kubeDir: string;
  let kubeconfig: string;
  const toy = toyRunbook(() => ({
    kind: 'steps',
    summary: 'release queued I/O then flush mpatha',
    steps: [
      {
        id: 'release-queued-io:3600a0b8',
        description: 'dmsetup message mpatha 0 fail_if_no_path',
        destructive: true,
        risk: 'high',
        file: '/w/release',
        evidence: [{ claim: 'every path of mpatha is dead', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' }],
      },
      {
        id: 'flush-map:3600a0b8',
        description: 'multipath -f mpatha',
        destructive: true,
        file: '/w/flush',
        evidence: [{ claim: 'nothing holds mpatha', source: 'toy', observedAt: new Date().toISOString(), status: 'holds' }],
      },
    ],
  }));

  const cli = async (args: string[], env: Record<string, string> = {}) => {
    try {
      const r = await exec(process.execPath, ['src/control/cli/main.ts', ...args], {
        env: { PATH: process.env['PATH'] ?? '', HOME: kubeDir, VOLUME_MEDIC_URL: receiver.url, KUBECONFIG: kubeconfig, ...env },
        timeout: 30_000,
      });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (e) {
      const x = e as { code: number; stdout: string; stderr: string };
      return { code: x.code, stdout: x.stdout, stderr: x.stderr };
    }
  };

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    ops = await startOperators();
    kubeDir = mkdtempSync(join(tmpdir(), 'vm-cli-kube-'));
    kubeconfig = join(kubeDir, 'config');
    // What `kubectl config set-credentials` writes: the current context's user holds a token.
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'prod',
        clusters: [{ name: 'prod', cluster: { server: ops.api.url } }],
        users: [{ name: 'ana', user: { token: ops.token('oncall-ana') } }],
        contexts: [{ name: 'prod', context: { cluster: 'prod', user: 'ana' } }],
      }),
    );
    const config = (over: Partial<Config> = {}) => testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], ...fastControls, ...over });
    receiver = await startReceiver(config(), { operatorKubeConfig: ops.api.kubeConfig() });
    // A parked job looks again every recheck, briefly 'active' each time; a long recheck keeps it
    // 'delayed' while the CLI looks at it. Approve and resume promote it at once regardless.
    agent = createNodeAgent({
      config: config({ nodeName: 'cli-node', runbookModes: { 'residual-multipath-cleanup': 'enforce' }, controlsRecheckSeconds: 30 }),
      registry: toy.registry,
      log: silent,
    });
  });
  afterAll(async () => {
    await agent?.close();
    await receiver?.close();
    await ops?.close();
    if (kubeDir) rmSync(kubeDir, { recursive: true, force: true });
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it('explains a captured payload as a table, and as JSON with --json', async () => {
    const r = await cli(['explain', 'test/fixtures/alertmanager/kube-node-not-ready-resolved.json']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^source: alertmanager; 1 signal\(s\), 1 job\(s\) would be stored/m);
    expect(r.stdout).toMatch(/RUNBOOK\s+NODE\s+KEY/);
    expect(r.stdout).toMatch(/residual-multipath-cleanup\s+\S+\s+residual_/);
    const j = await cli(['explain', 'test/fixtures/alertmanager/kube-node-not-ready-resolved.json', '--json']);
    expect(JSON.parse(j.stdout).jobs[0].runbook).toBe('residual-multipath-cleanup');
  });

  it('lists jobs, shows a parked job with its plan, approves it, and the job runs', async () => {
    const posted = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('cli-node', 'resolved')]), TOKEN);
    const id: string = posted.json.accepted[0].id;
    await waitFor('job parked for approval', async () => {
      const r = await cli(['job', id, '--json']);
      return JSON.parse(r.stdout).progress?.parked?.reason === 'approval' ? true : undefined;
    });

    const list = await cli(['jobs', '--node', 'cli-node']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+NODE\s+RUNBOOK\s+STATE\s+OUTCOME/m);
    expect(list.stdout).toContain(id);
    expect(list.stdout).toMatch(/cli-node\s+residual-multipath-cleanup\s+(delayed|waiting|active)\s+waiting/);

    // The fleet: the node with its open job and its agent, as the console's fleet page has it.
    const fleet = await cli(['fleet']);
    expect(fleet.code).toBe(0);
    expect(fleet.stdout).toMatch(/^\d+ node\(s\), \d+ with open jobs, 0 with jobs and no agent/);
    expect(fleet.stdout).toMatch(/^NODE\s+AGENT\s+OPEN\s+DEPTH/m);
    expect(fleet.stdout).toMatch(/^cli-node\s+seen\s+1\s/m);
    expect(JSON.parse((await cli(['fleet', '--all', '--json'])).stdout).rows.map((r: { node: string }) => r.node)).toContain('cli-node');
    expect((await cli(['fleet', '--sort', 'sideways'])).code).toBe(1);

    const shown = await cli(['job', id]);
    expect(shown.stdout).toMatch(/^waiting:\s+approval since .*waiting for approval of 1 step/m);
    expect(shown.stdout).toMatch(/^approval:\s+pending, expires/m);
    expect(shown.stdout).toMatch(/release-queued-io:3600a0b8\s+planned\s+destructive high-risk\s+dmsetup message mpatha 0 fail_if_no_path/);

    // `show`: what the console's page shows, from the same loader (GET /v1/jobs/:id/incident).
    const incident = await cli(['show', id]);
    expect(incident.code).toBe(0);
    expect(incident.stdout).toMatch(/^outcome:\s+waiting \(approval\) since \S+: waiting for approval of 1 step/m);
    expect(incident.stdout).toMatch(/^what started it\n {2}alertmanager: KubeNodeNotReady/m);
    expect(incident.stdout).toMatch(
      /^1\. release-queued-io:3600a0b8 {2}planned {2}destructive {2}high-risk\n {3}dmsetup message mpatha 0 fail_if_no_path\n {3}evidence:\n {5}HOLDS {4}every path of mpatha is dead; seen by toy at \S+\n {3}would run:\n {5}\$ host:write-file \/w\/release '4 bytes'$/m,
    );
    expect(incident.stdout).toMatch(/^audit trail\n.*\n.*cli-node\s+approval-requested\s+release-queued-io:3600a0b8/m);
    const detail = JSON.parse((await cli(['show', id, '--json'])).stdout);
    expect(detail.incident.steps.map((s: { id: string; plannedArgv?: string[][] }) => [s.id, s.plannedArgv?.[0]?.slice(0, 2)])).toEqual([
      ['release-queued-io:3600a0b8', ['host:write-file', '/w/release']],
      ['flush-map:3600a0b8', ['host:write-file', '/w/flush']],
    ]);
    // Every line a terminal gets: argv and output come from hosts.
    for (const line of incident.stdout.split('\n')) expect(line).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);

    const pending = await cli(['approvals']);
    expect(pending.stdout).toMatch(new RegExp(`${id}\\s+cli-node\\s+residual-multipath-cleanup`));

    const ok = await cli(['approve', id, '--why', 'paths confirmed dead on the array']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`${id}: approved by oncall-ana \\(paths confirmed dead on the array\\); steps: release-queued-io:3600a0b8`));

    const done = await waitFor('job completed', async () => {
      const j = JSON.parse((await cli(['job', id, '--json'])).stdout);
      return j.state === 'completed' ? j : undefined;
    });
    expect(done.result.outcome).toBe('succeeded');
    expect(done.approval).toMatchObject({ state: 'approved', decidedBy: 'oncall-ana' });
    const again = await cli(['approve', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/409 .*already approved/);
  });

  it('retries a rejected job as a new job with a reason, as text and --json; a second retry of it is refused', async () => {
    // The toy's steps are files on its host: gone again, so this job has work to do.
    for (const f of ['/w/release', '/w/flush']) await toy.host.unlink(f);
    const posted = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('cli-node', 'resolved', 'cliretry1')]), TOKEN);
    const id: string = posted.json.accepted[0].id;
    const job = (jobId: string) => getJson(`${receiver.url}/v1/jobs/${jobId}`, ops.token('reader'));
    await waitFor('job parked for approval', async () => ((await job(id)).progress?.parked?.reason === 'approval' ? true : undefined));
    const rejected = JSON.parse((await cli(['reject', id, '--why', 'not now', '--json'])).stdout);
    expect(rejected).toMatchObject({ state: 'rejected', decidedBy: 'oncall-ana', why: 'not now' });
    await waitFor('job failed', async () => ((await job(id)).state === 'failed' ? true : undefined));
    const unexplained = await cli(['retry', id]);
    expect(unexplained.code).toBe(1);
    expect(unexplained.stderr).toMatch(/400 .*why/);
    const r = await cli(['retry', id, '--why', 'the array team says go']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${id}: retried as ${id}.r1 (queue vm-node-{cli-node}) by oncall-ana; see: volume-medic show ${id}.r1\n`);
    // The new job waits for its own approval.
    await waitFor('the retry parked for approval', async () => ((await job(`${id}.r1`)).progress?.parked?.reason === 'approval' ? true : undefined));
    const again = await cli(['retry', id, '--why', 'twice', '--json']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`409 .*already retried as ${id}\\.r1`));
    await cli(['reject', `${id}.r1`, '--why', 'clean up']);
    await waitFor('the retry failed', async () => ((await job(`${id}.r1`)).state === 'failed' ? true : undefined));
    const json = JSON.parse((await cli(['retry', `${id}.r1`, '--why', 'second try', '--json'])).stdout);
    expect(json).toMatchObject({ id: `${id}.r2`, of: `${id}.r1`, retry: { of: id, n: 2 }, recordedAs: 'oncall-ana' });
  });

  it('pauses and resumes a node and the cluster, and shows the breakers', async () => {
    const p = await cli(['pause', '--node', 'cli-node', '--why', 'maintenance']);
    expect(p.stdout).toMatch(/node cli-node: paused by oncall-ana\nnow: cluster running; paused nodes: cli-node/);
    const c = await cli(['pause', '--token', ops.token('lead-bo')]);
    expect(c.stdout).toMatch(/cluster: paused by lead-bo\nnow: cluster PAUSED/);
    const ready = await (await fetch(`${receiver.url}/readyz`)).json();
    expect(ready).toMatchObject({ paused: true });
    expect((await cli(['resume'])).stdout).toMatch(/cluster: resumed by oncall-ana/);
    expect((await cli(['resume', '--node', 'cli-node'])).stdout).toMatch(
      /node cli-node: resumed by oncall-ana, \d+ parked job\(s\) released\nnow: cluster running$/m,
    );

    const b = await cli(['breakers']);
    expect(b.code).toBe(0);
    expect(b.stdout).toMatch(/^BREAKER\s+STATE\s+COUNT\s+CAP\s+WINDOW\s+WHY/m);
    expect(b.stdout).toMatch(/^cluster\s+ok\s+\d+\s+100\s+3600s/m);
    expect(b.stdout).toMatch(/^storm\s+ok/m);
    expect(b.stdout).toMatch(/^node\/cli-node\s+ok\s+2\s+20/m);
    const reset = await cli(['breakers', 'reset', 'cluster', '--why', 'drill']);
    expect(reset.stdout).toMatch(/cluster: was not tripped/);
    const json = JSON.parse((await cli(['breakers', '--json'])).stdout);
    expect(json.breakers.map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(['cluster', 'storm']));
    const f = await cli(['fleet', '--all']);
    expect(f.code, f.stderr).toBe(0);
    expect(f.stdout).toMatch(/^\d+ node\(s\), \d+ with open jobs, \d+ with jobs and no agent \(as of /);
    expect(f.stdout).toMatch(/^cli-node\s/m);
  });

  it('changes and shows modes', async () => {
    const r = await cli(['modes', 'set', 'node/cli-node', 'dry-run', '--why', 'vendor on site']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^node\/cli-node\s+dry-run\s+api\s+oncall-ana .*vendor on site/m);
    expect((await cli(['modes', 'set', 'node/cli-node', 'default'])).stdout).not.toMatch(/node\/cli-node/);
  });

  it('forces a placeholder’s release only with --force, naming who asks and why', async () => {
    // A node no agent serves here: the job stays stored for the test to read.
    const args = [
      'placeholders',
      'release',
      'local-pv-7',
      '--node',
      'cli-other-node',
      '--path',
      '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4',
      '--why',
      'disk replaced',
    ];
    const without = await cli(args);
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/400 .*force: true/);
    const forced = await cli([...args, '--force']);
    expect(forced.code).toBe(0);
    const id = /^(\S+): forced release of the placeholder of PV local-pv-7 on node cli-other-node stored/.exec(forced.stdout)?.[1];
    expect(id).toBeDefined();
    const shown = await cli(['--json', 'job', id ?? '']);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      evidence: [{ source: 'api', summary: 'release of the placeholder of PV local-pv-7 forced by oncall-ana: disk replaced' }],
    });
    expect((await cli(['placeholders', 'release', 'local-pv-7', '--force'])).code).toBe(2);
  });

  it('takes URL and token from flags or VOLUME_MEDIC_OPERATOR_TOKEN, says why it failed, and exits 1 on API errors and 2 on bad usage', async () => {
    const flags = await cli(['--url', receiver.url, '--token', ops.token('flag-fay'), 'pause', '--node', 'cli-flag'], {
      VOLUME_MEDIC_URL: '',
      KUBECONFIG: '',
    });
    expect(flags.stdout).toMatch(/node cli-flag: paused by flag-fay/);
    const env = await cli(['resume', '--node', 'cli-flag'], { VOLUME_MEDIC_OPERATOR_TOKEN: ops.token('env-eve') });
    expect(env.stdout).toMatch(/node cli-flag: resumed by env-eve/);
    const denied = await cli(['jobs'], { VOLUME_MEDIC_OPERATOR_TOKEN: 'wrong-token-wrong-token' });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/401 the API server did not accept the token.*\(operator token: VOLUME_MEDIC_OPERATOR_TOKEN\)/);
    const none = await cli(['jobs'], { KUBECONFIG: join(kubeDir, 'missing') });
    expect(none.stderr).toMatch(/401 missing bearer token.*no kubeconfig user .*missing: ENOENT/);
    // The webhook senders' token opens no CLI command.
    const webhook = await cli(['jobs', '--token', TOKEN]);
    expect(webhook.code).toBe(1);
    expect(webhook.stderr).toMatch(/403 that is the webhook token \(VOLUME_MEDIC_TOKEN\): it may only post webhooks; sign in with a Kubernetes token/);
    expect((await cli(['pause', '--by', 'someone'])).code).toBe(2);
    const down = await cli(['jobs'], { VOLUME_MEDIC_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach http:\/\/127.0.0.1:9/);
    expect((await cli(['approve'])).code).toBe(2);
    expect((await cli(['frobnicate'])).stderr).toMatch(/unknown command frobnicate/);
  });
});
