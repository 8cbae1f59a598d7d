import { readFileSync } from 'node:fs';
import type { Role } from './release-fleet.ts';

// The order a version's CHANGELOG entry documents for a rolling upgrade to it, read from the line
// `Upgrade order: <workload>, then <workload>, ... .` of that version's section (a
// paragraph, not a bullet: the bullets are Artifact Hub's changes): the upgrade test
// follows exactly what the document says, so the two cannot drift apart.

const WORKLOADS: Readonly<Record<string, Role>> = {
  'node agents': 'node-agent',
  'cluster worker': 'cluster-worker',
  receivers: 'receiver',
};

export function documentedUpgradeOrder(changelogPath: string, version: string): Role[] {
  const text = readFileSync(changelogPath, 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith(`${version}\n`));
  if (!section) throw new Error(`${changelogPath} has no section ## ${version}`);
  const line = /^Upgrade order: ([^.(:]+)/m.exec(section)?.[1];
  if (!line) throw new Error(`${changelogPath}'s ${version} section has no line "Upgrade order: <workloads>."`);
  const order = line.split(/,\s*(?:then\s+)?|\s+then\s+/).map((w) => {
    const role = WORKLOADS[w.trim().replace(/^the\s+/, '')];
    if (!role) throw new Error(`"${w.trim()}" in ${version}'s upgrade order is not one of ${Object.keys(WORKLOADS).join(', ')}`);
    return role;
  });
  if (new Set(order).size !== 3 || order.length !== 3) throw new Error(`${version}'s upgrade order must name each workload once: ${line}`);
  return order;
}
