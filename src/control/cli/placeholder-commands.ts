import type { ApiClient } from './api-client.ts';
import { ArmAnswer, PlaceholdersAnswer, ReleaseAnswer, read } from './answers.ts';
import { type Opts, type Out, UsageError } from './command-kit.ts';
import { table } from './table.ts';
import { describePlaceholder, uninstallPlan, type UninstallPlan } from './uninstall-plan.ts';

// Local PV placeholders from the command line:
// - `placeholders`: what the node agents report attached (GET /v1/placeholders);
// - `placeholders release <pv> ... --force --why`: an operator's release without the disk check;
// - `prepare-uninstall`: asks for every release the runbook's rules allow and says what blocks the rest;
// - `uninstall-check`: the chart's pre-delete hook; exit 1 while anything is attached.
// The last two exit 1 while placeholders remain: an uninstall now would strand them (nothing
// releases a placeholder once the agents are gone, and the disk's return then finds a loop device
// at its path).

const RELEASE_USAGE = 'placeholders release <pv> --node N --path /dev/disk/by-id/... --force --why TEXT';

async function list(api: ApiClient): Promise<{ raw: unknown; answer: PlaceholdersAnswer }> {
  const raw = await api.get('/v1/placeholders');
  return { raw, answer: read('GET /v1/placeholders', PlaceholdersAnswer, raw) };
}

export async function placeholders(api: ApiClient, args: string[], o: Opts, out: Out): Promise<void> {
  if (args[0] === 'release') return release(api, args[1], o, out);
  if (args.length > 0) throw new UsageError(`placeholders | ${RELEASE_USAGE}`);
  const { raw, answer } = await list(api);
  if (o.json) return out(JSON.stringify(raw, null, 2));
  if (answer.placeholders.length === 0) out('no placeholder attached on any node that reports');
  else
    out(
      table(
        ['node', 'pv', 'path', 'loop', 'since', 'disk back', 'held by', 'reported'],
        answer.placeholders.map((p) => [
          p.node,
          p.pv,
          p.path,
          p.attached === false ? `${p.loop} (detached)` : p.loop,
          p.since,
          p.diskBack ? 'yes' : 'no',
          p.heldBy === null ? '(not read)' : p.heldBy.join('; ') || '-',
          p.reportedAt,
        ]),
        120,
      ),
    );
  for (const u of answer.unreadable) out(`node ${u.node}: placeholder record ${u.file} cannot be read`);
  for (const i of answer.invalid) out(`node ${i.node}: placeholders unknown: ${i.why}`);
}

/** An operator's release without the disk check (POST /v1/placeholders/release); without --force the API says why force is needed. */
async function release(api: ApiClient, pv: string | undefined, o: Opts, out: Out): Promise<void> {
  if (!pv || !o.node || !o.path) throw new UsageError(RELEASE_USAGE);
  const raw = await api.post('/v1/placeholders/release', {
    node: o.node,
    pv,
    path: o.path,
    ...(o.force ? { force: true } : {}),
    why: o.why ?? '',
  });
  if (o.json) return out(JSON.stringify(raw, null, 2));
  const r = read('POST /v1/placeholders/release', ReleaseAnswer, raw);
  const a = r.accepted;
  out(
    `${a.id}: forced release of the placeholder of PV ${pv} on node ${o.node} ${a.deduplicated ? 'was already asked for' : 'stored'} (queue ${a.queue}), asked by ${r.recordedAs}; see: volume-medic job ${a.id}`,
  );
}

function printBlocked(plan: UninstallPlan, out: Out): void {
  const nodes = [...new Set(plan.blocked.map((b) => b.node))].sort();
  for (const node of nodes) {
    out(`node ${node}:`);
    for (const b of plan.blocked.filter((x) => x.node === node)) out(`  ${b.what}: stays, ${b.why}.\n    decide: ${b.decide}`);
  }
}

/** Asks for what may be released and says what blocks the rest; 0 only once nothing is attached. */
export async function prepareUninstall(api: ApiClient, o: Opts, out: Out): Promise<number> {
  if (o.force && !o.why) throw new UsageError('prepare-uninstall --force --why TEXT (a forced release must say why the disks will not return)');
  const { answer } = await list(api);
  const plan = uninstallPlan(answer, { force: o.force ?? false });
  if (plan.release.length === 0 && plan.blocked.length === 0) {
    out('no placeholder attached on any node that reports: nothing stops an uninstall');
    return 0;
  }
  for (const r of plan.release) {
    const body = { node: r.row.node, pv: r.row.pv, path: r.row.path };
    const raw = r.forced
      ? await api.post('/v1/placeholders/release', { ...body, force: true, why: o.why ?? '' })
      : await api.post('/v1/placeholders/release-if-back', body);
    const a = read('POST /v1/placeholders/release', ReleaseAnswer, raw).accepted;
    out(
      `node ${r.row.node}: ${describePlaceholder(r.row)}: ${r.forced ? 'forced release (disk check skipped; never if in use)' : 'disk back, release'} ${a.deduplicated ? 'already asked for' : 'asked for'}: volume-medic job ${a.id}`,
    );
  }
  printBlocked(plan, out);
  out(
    `\n${answer.placeholders.length} placeholder(s) still attached${plan.release.length ? `, ${plan.release.length} release(s) asked for: run prepare-uninstall again in a minute to see them go` : ''}. Do not uninstall until this command says nothing is attached.`,
  );
  return 1;
}

export interface UninstallCheckOpts extends Opts {
  allowStranded: boolean;
  /** Once it passes, mark the node queues (POST /v1/uninstall/arm) and wait until every agent has looked (nodeAgent.removeHostState). */
  armHostStateRemoval: boolean;
  /** How long the agents take to see the mark (their report interval, with room). */
  armWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** The pre-delete hook's check: 1 (naming each) while anything is attached, unless `allowStranded`. */
export async function uninstallCheck(api: ApiClient, o: UninstallCheckOpts, out: Out): Promise<number> {
  const code = await checkPlaceholders(api, o, out);
  if (code !== 0 || !o.armHostStateRemoval) return code;
  try {
    const r = read('POST /v1/uninstall/arm', ArmAnswer, await api.post('/v1/uninstall/arm', {}));
    const wait = o.armWaitMs ?? ARM_WAIT_MS;
    out(`uninstall-check: ${r.nodes} node queue(s) marked for the uninstall until ${r.expiresAt}; waiting ${wait / 1000} s for the agents to see it`);
    await (o.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms))))(wait);
  } catch (err) {
    // The host state then stays: the uninstall itself is not held up for it.
    out(`uninstall-check: WARNING: could not mark the node queues (${(err as Error).message}): the agents keep their host state`);
  }
  return 0;
}

/** The agents read the mark with each report (every 30 s): one interval and some. */
const ARM_WAIT_MS = 40_000;

async function checkPlaceholders(api: ApiClient, o: UninstallCheckOpts, out: Out): Promise<number> {
  let answer: PlaceholdersAnswer;
  try {
    ({ answer } = await list(api));
  } catch (err) {
    // The override is for a cluster being torn down, where the receiver may be gone already.
    if (!o.allowStranded) throw err;
    out(
      `uninstall-check: WARNING: could not ask the receiver which placeholders are attached (${(err as Error).message}); going on (uninstall.allowStrandedPlaceholders=true)`,
    );
    return 0;
  }
  const plan = uninstallPlan(answer, { force: false });
  if (plan.release.length === 0 && plan.blocked.length === 0) {
    out('uninstall-check: no Local PV placeholder attached on any node that reports');
    return 0;
  }
  const lines = [
    ...answer.placeholders.map((p) => `  node ${p.node}: ${describePlaceholder(p)}`),
    ...answer.unreadable.map((u) => `  node ${u.node}: placeholder record ${u.file} (unreadable)`),
    ...answer.invalid.map((i) => `  node ${i.node}: placeholders unknown: ${i.why}`),
  ];
  if (o.allowStranded) {
    out(`uninstall-check: WARNING: uninstalling with these placeholders left attached (uninstall.allowStrandedPlaceholders=true):\n${lines.join('\n')}`);
    return 0;
  }
  out(
    `uninstall-check: refusing the uninstall: Local PV placeholders are attached, and nothing would release them once the agents are gone:\n${lines.join('\n')}\n` +
      'Run `volume-medic prepare-uninstall` (it releases what is safe and says what blocks the rest), or, for a cluster being torn down, set uninstall.allowStrandedPlaceholders=true.',
  );
  return 1;
}
