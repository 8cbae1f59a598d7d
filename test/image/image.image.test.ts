import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildImage } from '../../scripts/image/build.ts';
import { podSpec, rendered, SETS } from '../support/manifests.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../testkit/payloads.ts';
import { dropPrefix, uniquePrefix } from '../support/redis.ts';
import { writeKeysDir } from '../support/trust.ts';
import { waitFor } from '../support/wait.ts';
import { registryUnavailable, startOciRegistry } from '../support/oci-registry.ts';
import { canRunRootfs, mountsUnder, readImage, startInRootfs, unpack, type RootfsProcess } from './rootfs-process.ts';

// The built image, run: unpack its layout as a runtime would, start the receiver, the cluster
// worker and a node agent (dry-run, the default mode) from it with the chart's commands, the
// image's user, working directory and environment and a read-only root, against a real Redis on
// loopback; send one Alertmanager webhook and wait until the node agent inside the image has run
// the job. VM_IMAGE_LAYOUT names a layout `npm run image` built (.ci/run builds it first);
// without it the test builds one into a temporary folder (about a minute with warm caches).

const skip = canRunRootfs();
const TOKEN = 'image-test-token-0123456789abcdef';
const NODE = 'image-node-1';

describe.skipIf(skip)('the image runs the three processes of the chart', () => {
  const prefix = uniquePrefix('image');
  let layout: string;
  let tag: string;
  let scratch: string;
  let rootfs: string;
  let keys: string;
  const procs: RootfsProcess[] = [];
  const commands = new Map<string, string[]>();
  const runsAsRoot = new Set<string>();

  beforeAll(async () => {
    for (const o of rendered(SETS[0]!)) {
      for (const c of podSpec(o)?.containers ?? []) {
        if (c.command?.[0] !== 'node') continue;
        commands.set(c.name, c.command);
        if ((c as { securityContext?: { runAsUser?: number } }).securityContext?.runAsUser === 0) runsAsRoot.add(c.name);
      }
    }
    scratch = mkdtempSync(join(tmpdir(), 'volume-medic-image-test-'));
    if (process.env['VM_IMAGE_LAYOUT']) {
      layout = resolve(process.env['VM_IMAGE_LAYOUT']);
      tag = (JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: { annotations: Record<string, string> }[] }).manifests[0]!
        .annotations['org.opencontainers.image.ref.name']!;
    } else {
      const built = await buildImage(join(scratch, 'build'));
      layout = built.layout;
      tag = built.tag;
    }
    rootfs = unpack(layout, tag, join(scratch, 'bundle'));
    // Keys as a Secret volume gives them: readable by the process's user.
    keys = writeKeysDir();
    chmodSync(keys, 0o755);
    for (const f of readdirSync(keys)) chmodSync(join(keys, f), 0o644);
  }, 600_000);

  afterAll(async () => {
    for (const p of procs) await p.stop();
    await dropPrefix(prefix);
    if (scratch && mountsUnder(scratch).length === 0) rmSync(scratch, { recursive: true, force: true });
  }, 60_000);

  const image = () => readImage(layout).config.config;

  const start = (name: string, env: Record<string, string>, binds: [string, string][] = []) => {
    const cfg = image();
    const imageEnv = Object.fromEntries((cfg.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    const p = startInRootfs(rootfs, {
      user: runsAsRoot.has(name) ? '0:0' : cfg.User!,
      cwd: cfg.WorkingDir!,
      argv: commands.get(name)!,
      env: {
        ...imageEnv,
        REDIS_URL: inject('redisUrl'),
        QUEUE_PREFIX: prefix,
        LOG_LEVEL: 'info',
        ALLOW_PLAINTEXT_HTTP: 'true',
        SIGNING_KEYS_DIR: '/etc/volume-medic/signing',
        KUBERNETES_SERVICE_HOST: '',
        KUBECONFIG: '',
        ...env,
      },
      binds: [[keys, '/etc/volume-medic/signing'], ...binds],
    });
    procs.push(p);
    return p;
  };

  it('is labelled, runs as a non-root user by default, carries its SBOM and starts the receiver by default', () => {
    const { config, manifest } = readImage(layout);
    const c = config.config;
    expect(c.User).toBe('65532:65532');
    expect(c.WorkingDir).toBe('/app');
    expect(c.Cmd).toEqual(commands.get('receiver'));
    for (const k of ['source', 'revision', 'version', 'created']) expect(c.Labels?.[`org.opencontainers.image.${k}`], k).toBeTruthy();
    expect(c.Labels?.['org.opencontainers.image.created']).toBe(config.created);
    expect(manifest.annotations).toEqual(c.Labels);
    expect(c.Env).toContain(`VOLUME_MEDIC_REVISION=${c.Labels!['org.opencontainers.image.revision']}`);
    const passwd = readFileSync(join(rootfs, 'etc/passwd'), 'utf8');
    expect(passwd).toMatch(/^nonroot:x:65532:65532:/m);
    const sbom = JSON.parse(readFileSync(join(rootfs, 'usr/share/doc/volume-medic/sbom.spdx.json'), 'utf8'));
    expect(sbom.spdxVersion).toBe('SPDX-2.3');
    const names = new Set((sbom.packages as { name: string }[]).map((p) => p.name));
    for (const n of ['multipath-tools', 'ceph-common', 'sg3-utils', 'udev', 'util-linux', 'bullmq', 'express', 'node']) expect(names, n).toContain(n);
    // Production dependencies only.
    expect(names).not.toContain('vitest');
    expect(names).not.toContain('typescript');
    expect(existsSync(join(rootfs, 'app/node_modules/typescript'))).toBe(false);
  });

  it("runs an Alertmanager webhook's job on the node agent inside the image", async () => {
    const receiver = start('receiver', {
      PORT: '0',
      LISTEN_ADDRESS: '127.0.0.1',
      VOLUME_MEDIC_TOKEN: TOKEN,
      OPERATOR_AUTH: 'insecure',
      ALLOW_UNAUTHENTICATED: 'true',
    });
    const listening = await receiver.waitFor(/^.*"msg":"receiver listening".*$/m);
    const url = /"url":"(http:[^"]+)"/.exec(listening)![1]!;
    const state = mkdtempSync(join(scratch, 'cluster-state-'));
    chmodSync(state, 0o777);
    // Both workers share this machine's network (unlike pods): each probe server on a free port.
    const worker = start('cluster-worker', { STATE_DIR: '/var/lib/volume-medic', PROBE_PORT: '0', PROBE_LISTEN_ADDRESS: '127.0.0.1' }, [
      [state, '/var/lib/volume-medic'],
    ]);
    // The node agent's host, as the chart mounts it under /host; empty here: nothing to clean up.
    const host = mkdtempSync(join(scratch, 'host-'));
    for (const d of ['dev', 'sys', 'proc', 'var/lib/volume-medic', 'etc/multipath', 'run/udev']) mkdirSync(join(host, d), { recursive: true });
    // The chart mounts the agent's state at /host/var/lib/volume-medic and at STATE_DIR itself.
    const agent = start(
      'node-agent',
      {
        NODE_NAME: NODE,
        HOST_ROOT: '/host',
        HOST_NSENTER: 'true',
        STATE_DIR: '/var/lib/volume-medic',
        PROBE_PORT: '0',
        PROBE_LISTEN_ADDRESS: '127.0.0.1',
        LOG_LEVEL: process.env['VM_IMAGE_LOG_LEVEL'] ?? 'info',
      },
      [
        [host, '/host'],
        [join(host, 'var/lib/volume-medic'), '/var/lib/volume-medic'],
      ],
    );
    await worker.waitFor(/"msg":"cluster worker started"/);
    await agent.waitFor(/"msg":"node agent started"/);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain(`commit="${image().Labels!['org.opencontainers.image.revision']}"`);

    const r = await post(`${url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(NODE, 'resolved')]), TOKEN);
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    const id = r.json.accepted.find((a: { node: string }) => a.node === NODE).id as string;
    let last: unknown;
    const job = await waitFor(
      'the job finished by the agent in the image',
      async () => {
        // OPERATOR_AUTH=insecure: job reads need no identity (the webhook token may only post).
        const j = await getJson(`${url}/v1/jobs/${id}`);
        last = j;
        return j.state === 'completed' || j.state === 'failed' ? j : undefined;
      },
      60_000,
    ).catch((e: Error) => {
      throw new Error(
        `${e.message}\n--- job\n${JSON.stringify(last)}\n--- receiver\n${receiver.output()}\n--- agent\n${agent.output()}\n--- cluster worker\n${worker.output()}`,
      );
    });
    expect(job.state, `${JSON.stringify(job)}\n--- agent\n${agent.output()}`).toBe('completed');
    expect(job.result).toMatchObject({ ranOn: NODE, mode: 'dry-run' });
    expect(job.attemptsMade).toBe(1);
    // It looked through the image's nsenter, as on a node (HOST_NSENTER=true). Its pid 1 is the
    // agent itself here (a pid namespace of its own), whose mount namespace's root is this
    // machine's: the "host" multipath is this machine's, usually absent (exit 127), which the
    // runbook reads as no maps. A missing nsenter in the image would have no exit code at all.
    const first = (job.result.commands as { argv: string[]; exitCode: number | null }[])[0]!;
    expect(first.argv.slice(0, 6)).toEqual(['nsenter', '-t', '1', '-m', '-n', '--']);
    expect(first.exitCode, JSON.stringify(first)).toEqual(expect.any(Number));
  }, 180_000);
  const noPush =
    registryUnavailable() ??
    (spawnSync('sh', ['-c', 'command -v skopeo'], { stdio: 'ignore' }).status === 0 ? undefined : 'skopeo is missing (Debian: apt-get install skopeo)');
  it.skipIf(noPush)(
    `pushes to an OCI registry with the digest it was built with${noPush ? ` (skipped: ${noPush})` : ''}`,
    async () => {
      const registry = await startOciRegistry();
      try {
        const ref = `docker://${registry.host}/volume-medic/volume-medic:${tag}`;
        // --preserve-digests: skopeo fails rather than rewrite the manifest (a new digest).
        const copy = spawnSync('skopeo', ['copy', '--quiet', '--preserve-digests', '--dest-tls-verify=false', `oci:${layout}:${tag}`, ref], {
          encoding: 'utf8',
        });
        expect(copy.status, `${copy.stderr}\n${registry.log()}`).toBe(0);
        const inspect = spawnSync('skopeo', ['inspect', '--tls-verify=false', '--raw', ref], { encoding: 'utf8' });
        expect(inspect.status, inspect.stderr).toBe(0);
        const inspected = spawnSync('skopeo', ['inspect', '--tls-verify=false', ref], { encoding: 'utf8' });
        expect(JSON.parse(inspected.stdout).Digest).toBe(readImage(layout).digest);
        // The registry serves the same bytes by digest, as a chart pinned to image.digest pulls them.
        const byDigest = await fetch(`http://${registry.host}/v2/volume-medic/volume-medic/manifests/${readImage(layout).digest}`, {
          headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
        });
        expect(byDigest.status).toBe(200);
        expect(await byDigest.text()).toBe(inspect.stdout);
      } finally {
        await registry.stop();
      }
    },
    300_000,
  );
});

// Where it cannot run, one skipped test that says why (vitest prints its name).
if (skip) {
  describe('the image test', () => {
    it.skip(`is skipped: ${skip}`, () => {});
  });
}
