import type { ResidualMultipathJob } from '../../../src/core/catalogue/jobs.ts';
import { DEVICE_PATTERNS } from '../../../src/core/catalogue/names.ts';
import { TransientError } from '../../../src/core/errors.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { describeFailure } from '../../host/command-failed.ts';
import type { Host } from '../../host/host.ts';
import type { AttachedVolumes } from './attached-volumes.ts';
import type { AttachmentFacts, IntentFacts, ResidualFacts } from './facts.ts';
import { readIntents } from './intents.ts';
import { isDeadPath, parseMultipathLl } from './multipath-ll.ts';
import { parseMultipathdMapsJson } from './multipathd-maps-json.ts';
import { findByIdLinks, findMapOpeners, findMounts, findOpenCounts, findStacked } from './observe-interlocks.ts';
import { dmUuids, intentFacts, mapFacts, readTrimmed } from './observe-maps.ts';
import { probeDead, recordDead } from './observe-probes.ts';
import { readObservations } from './observations.ts';
import type { ResidualPolicy } from './policy.ts';
import { normalizeWwid, wwidOfDmUuid } from './wwid.ts';

// Looks at everything docs/safety.md asks of this runbook, through the Host port, each command with a
// deadline. Order matters: every cheap interlock (holders, mounts, loop devices and LIO exports
// on top, attachments, openers) is read first, and only maps that pass all of them are probed
// (a probe of a held map could only leave one more process in D state). A probe left stuck is
// then one of its map's openers, known as ours; open counts are read after the probes. The stages
// are observe-maps.ts (the listing), observe-interlocks.ts and observe-probes.ts.

export interface ObserveDeps {
  attached: AttachedVolumes;
  policy: ResidualPolicy;
  ranOn: string;
  now: () => Date;
  /**
   * Dry-run changes nothing, and that includes not leaving a probe stuck in D state on a map that
   * queues I/O (queue_if_no_path): such maps are not probed in dry-run (see plan.ts).
   */
  dryRun: boolean;
  /** Host path of the agent's state directory: observations over time and intent records. */
  stateDir: string;
}

const LIST_MAPS = ['multipath', '-ll'] as const;
const SHOW_MAPS_JSON = ['multipathd', 'show', 'maps', 'json'] as const;

async function attachmentsOf(attached: AttachedVolumes, node: string): Promise<AttachmentFacts> {
  let answer: Set<string> | 'unknown';
  try {
    answer = await attached.wwidsAttachedTo(node);
  } catch (err) {
    throw new TransientError(`cannot read the VolumeAttachments of node ${node}: ${(err as Error).message}`);
  }
  if (answer === 'unknown')
    return {
      known: false,
      why: 'the volumes attached to this node cannot be resolved to WWIDs (no cluster lookups, or an unresolvable volume)',
    };
  return { known: true, wwids: [...answer].map(normalizeWwid).sort() };
}

export async function observe(job: ResidualMultipathJob, host: Host, deps: ObserveDeps): Promise<ResidualFacts> {
  const { policy } = deps;
  const t = { timeoutMs: policy.commandTimeoutMs };
  const node = job.target.node;
  const attachments = await attachmentsOf(deps.attached, node);
  const uuids = await dmUuids(host);
  const bootId = await readTrimmed(host, '/proc/sys/kernel/random/boot_id');
  const intentListing = await readIntents(host, deps.stateDir);
  const observeNotes: string[] = [];
  const base = {
    node,
    ranOn: deps.ranOn,
    mode: deps.dryRun ? ('dry-run' as const) : ('enforce' as const),
    observedAt: deps.now().toISOString(),
    attachments,
    mountNamespaces: 0,
    unreadableMountinfo: [],
    bootId,
    intents: [] as IntentFacts[],
    unreadableIntents: intentListing.unreadable,
    observeNotes,
  };

  const ll = await host.run(LIST_MAPS, t);
  if (wasSimulated(ll) || ll.exitCode !== 0 || ll.timedOut) {
    const why = wasSimulated(ll) ? 'multipath -ll was not run' : describeFailure(ll);
    const mpathDms = [...uuids].filter(([, u]) => wwidOfDmUuid(u) !== null).map(([dm]) => dm);
    return {
      ...base,
      listing: {
        ok: false,
        why: `${why}${mpathDms.length ? `; sysfs shows multipath maps ${mpathDms.join(', ')}` : '; sysfs shows no multipath map'}`,
      },
      maps: [],
      multipathdAgrees: null,
    };
  }
  const listing = parseMultipathLl(ll.stdout);

  const jsonRun = await host.run(SHOW_MAPS_JSON, t);
  const json = jsonRun.exitCode === 0 ? parseMultipathdMapsJson(jsonRun.stdout) : null;

  const { maps, agrees } = await mapFacts(host, listing.maps, uuids, json);

  await findStacked(host, maps);

  const intents = await intentFacts(host, intentListing.records, uuids, maps);

  const scan = await findMounts(host, maps, intents);

  const observations = await readObservations(host, deps.stateDir);
  if (observations.problem) observeNotes.push(observations.problem);
  const openers = await findMapOpeners(host, maps, intents, observations.observations, bootId);

  // Probe only maps whose every path is dead and that pass every cheaper interlock.
  const ctx = { ...base, mountNamespaces: scan.namespaces.length };
  const dead = maps.filter((m) => m.dm !== null && DEVICE_PATTERNS.dm.test(m.dm) && m.paths.length > 0 && m.paths.every(isDeadPath));
  const stuckNow = await probeDead(host, dead, ctx, deps);

  await recordDead(host, deps, observations.observations, dead, openers, stuckNow, bootId);

  // After the probes: a probe stuck on the map is one of its openers from now on.
  await findOpenCounts(host, maps, t);
  await findByIdLinks(host, maps);

  return {
    ...base,
    intents,
    listing: listing.stray.length ? { ok: false, why: `multipath -ll printed lines outside any map: ${listing.stray.slice(0, 3).join(' | ')}` } : { ok: true },
    maps,
    mountNamespaces: scan.namespaces.length,
    unreadableMountinfo: scan.unreadable,
    multipathdAgrees: agrees,
  };
}
