import { readObjects, RENDERED_FILE } from '../../scripts/deploy/chart.ts';

// A container's command in deploy/volume-medic.yaml (the chart rendered), as Kubernetes runs it:
// Node's flags, the script, and the allocator and runtime settings the container's environment
// gives the process. A bench that measures a process "as deployed" starts it with all three, and
// a floor it compares with gets the same flags and settings, so a ratio shows what the code adds.

/** Environment entries that tune the process rather than configure volume-medic. */
const RUNTIME_TUNABLE = /^(MALLOC_[A-Z_]+|GLIBC_TUNABLES|UV_THREADPOOL_SIZE)$/;

interface ContainerSpec {
  command?: string[];
  env?: { name: string; value?: string }[];
}

export interface DeployedCommand {
  flags: string[];
  script: string;
  /** The container's runtime tunables with literal values (MALLOC_ARENA_MAX...). */
  env: Record<string, string>;
}

function deployedCommand(kind: 'DaemonSet' | 'Deployment', name: string): DeployedCommand {
  const o = readObjects(RENDERED_FILE).find((x) => x.kind === kind && x.metadata.name === name);
  const c = (o?.spec as { template: { spec: { containers: ContainerSpec[] } } } | undefined)?.template.spec.containers[0];
  const command = c?.command ?? [];
  if (command[0] !== 'node' || command.length < 2) throw new Error(`unexpected ${name} command in ${RENDERED_FILE}: ${JSON.stringify(command)}`);
  const env = Object.fromEntries((c?.env ?? []).filter((e) => RUNTIME_TUNABLE.test(e.name) && e.value !== undefined).map((e) => [e.name, e.value!]));
  return { flags: command.slice(1, -1), script: command.at(-1)!, env };
}

export const nodeAgentCommand = (): DeployedCommand => deployedCommand('DaemonSet', 'volume-medic-node-agent');
/** The receiver runs with the Deployment's V8 flags (its heap limit), so its throughput and RSS are the deployed ones. */
export const receiverCommand = (): DeployedCommand => deployedCommand('Deployment', 'volume-medic-receiver');
