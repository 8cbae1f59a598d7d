import type { PlaceholderRow, PlaceholdersAnswer } from './answers.ts';

// What `volume-medic prepare-uninstall` does with each placeholder the agents report, decided
// without I/O. The rules are the runbook's (workers/runbooks/local-pv-placeholder/plan.ts):
//   - nothing may hold the loop device: a held device stays, forced or not (`losetup -d` would
//     only mark it, and the pod reading it would lose it at its last close); a device whose
//     holders were not read is not known to be free, so it waits for the next report;
//   - the disk back: a checked release (the agent verifies the disk again before it detaches);
//   - the disk not back: only an operator's forced release (--force --why), the existing
//     POST /v1/placeholders/release, for a disk replaced or not returning.
// Anything that may hide a placeholder (a record the agent cannot read, a report that does not
// parse) blocks until a person has looked.

interface Release {
  row: PlaceholderRow;
  forced: boolean;
}

interface Blocker {
  node: string;
  /** What it is: `PV <pv> (<path>, <loop>)`, a record file, or a node's report. */
  what: string;
  /** Why it stays. */
  why: string;
  /** What the operator must decide or do. */
  decide: string;
}

export interface UninstallPlan {
  release: Release[];
  blocked: Blocker[];
}

export const describePlaceholder = (p: PlaceholderRow): string => `PV ${p.pv} (${p.path} -> /dev/${p.loop}, since ${p.since})`;

const forceCommand = (p: PlaceholderRow): string =>
  `volume-medic placeholders release ${p.pv} --node ${p.node} --path ${p.path} --force --why TEXT (or prepare-uninstall --force --why TEXT)`;

export function uninstallPlan(list: PlaceholdersAnswer, o: { force: boolean }): UninstallPlan {
  const plan: UninstallPlan = { release: [], blocked: [] };
  for (const p of list.placeholders) {
    const what = describePlaceholder(p);
    if (p.heldBy === null) {
      plan.blocked.push({
        node: p.node,
        what,
        why: 'what holds its loop device was not read',
        decide: 'run prepare-uninstall again after the next report (agents report every 30 s)',
      });
    } else if (p.heldBy.length > 0) {
      plan.blocked.push({
        node: p.node,
        what,
        why: `still in use: ${p.heldBy.join('; ')}`,
        decide: 'stop the pod that uses the PV (or unmount it); a placeholder in use is never released, not even with --force',
      });
    } else if (p.diskBack) {
      plan.release.push({ row: p, forced: false });
    } else if (o.force) {
      plan.release.push({ row: p, forced: true });
    } else {
      plan.blocked.push({
        node: p.node,
        what,
        why: 'its disk is not back',
        decide: `bring the disk back (it is then released), or, if it was replaced or will not return, release it without the disk check: ${forceCommand(p)}`,
      });
    }
  }
  for (const u of list.unreadable) {
    plan.blocked.push({
      node: u.node,
      what: `placeholder record ${u.file}`,
      why: 'the agent cannot read it, so a placeholder may be attached that nobody can name',
      decide: `inspect /var/lib/volume-medic/placeholders/${u.file} on node ${u.node} by hand (losetup --list), then remove or repair it`,
    });
  }
  for (const i of list.invalid) {
    plan.blocked.push({
      node: i.node,
      what: 'its placeholders',
      why: `they are not known: ${i.why}`,
      decide: `its placeholders are unknown: make sure the node agent on ${i.node} runs (it reports again within 30 s)`,
    });
  }
  return plan;
}
