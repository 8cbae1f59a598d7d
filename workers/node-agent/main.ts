import { createLogger } from '../../src/adapters/observability/logger.ts';
import { ConfigError } from '../../src/core/config/load.ts';
import { agentEnqueuer } from '../agent-bootstrap/enqueuer.ts';
import { runAgent } from '../agent-bootstrap/run-agent.ts';
import { lazyRegistry } from '../engine/lazy-registry.ts';
import { createRealHost } from '../host/real-host.ts';
import { createNodeAgent } from './agent.ts';
import { nodeKube } from './node-kube.ts';
import { NODE_RUNBOOKS } from './node-runbooks.ts';
import { startReadonlyScan } from './readonly-scan.ts';
import { startSelfChecks } from './self-checks.ts';
import { REPORT_INTERVAL_MS, startPlaceholderReports } from './placeholder-report.ts';
import { writePlaceholderReport } from '../../src/adapters/jobstore/placeholder-reports.ts';
import { uninstallMarked } from '../../src/adapters/jobstore/uninstall-mark.ts';
import { removeHostStateIfUninstalling } from './host-state-removal.ts';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';

// `npm run node-agent`: the node agent, configured from the environment (agent-bootstrap/ does
// what both agents do: enrolment, probes, shutdown). It serves exactly one node, NODE_NAME (in a
// DaemonSet, spec.nodeName): that node's queue, the node runbooks (loaded on the first job), and
// its own checks (a placeholder's disk back, an interrupted cleanup).

const log = createLogger('node-agent');
await runAgent(
  'node-agent',
  log,
  (config) => {
    if (!config.nodeName) throw new ConfigError('NODE_NAME is required: the node agent serves exactly one node (set it from spec.nodeName)');
    return { as: 'node-agent', node: config.nodeName };
  },
  async ({ config, enrolled, who: { node } }) => {
    const kube = await nodeKube(node, log);
    const registry = lazyRegistry(NODE_RUNBOOKS, async () => (await import('./registry.ts')).defaultNodeRegistry(config, log, kube.deps));
    const agent = createNodeAgent({
      config,
      registry,
      log: log.child({ node }),
      nodeLabels: kube.nodeLabels,
      events: kube.events,
      enrolled,
      kubeRead: kube.read,
    });
    // What it notices by itself goes on its own queue through its store's command connection: no
    // third connection per node. Enrolled, the receiver recorded this node's queue; its own Redis user may not.
    const dispatcher = agentEnqueuer(agent.store, config, agent.trust, { recordsQueues: !enrolled });
    // One host for what runs beside the worker (it holds no state: its settings only).
    const host = createRealHost({ root: config.hostRoot, nsenter: config.hostNsenter });
    const queue = nodeQueueName(node);
    const checks = startSelfChecks({
      node,
      host,
      stateDir: config.stateDir,
      enqueue: (jobs) => dispatcher.enqueue(jobs),
      intervalMs: config.placeholderCheckSeconds * 1000,
      log: log.child({ node, component: 'self-checks' }),
      // Without cluster access no UID can be told from a pod's: no scan (a job would refuse anyway).
      ...(kube.deps.orphanKube && config.orphanScanSeconds > 0
        ? {
            orphans: {
              kube: kube.deps.orphanKube,
              kubeletRoot: config.kubeletRootDir,
              minAgeMs: config.orphanMinAgeSeconds * 1000,
              now: () => new Date(),
              intervalMs: config.orphanScanSeconds * 1000,
            },
          }
        : {}),
    });
    const readonlyScan = startReadonlyScan({
      node,
      host,
      kubeletRoot: config.kubeletRootDir,
      enqueue: (jobs) => dispatcher.enqueue(jobs),
      intervalMs: config.readonlyScanSeconds * 1000,
      log: log.child({ node, component: 'readonly-scan' }),
    });
    // Under its own queue, through the store's command connection (its Redis user may write nowhere else).
    const reports = startPlaceholderReports({
      host,
      stateDir: config.stateDir,
      node,
      publish: (report) => writePlaceholderReport(agent.store.connection, config.queuePrefix, queue, report),
      intervalMs: REPORT_INTERVAL_MS,
      ...(config.removeHostStateOnUninstall ? { readMark: () => uninstallMarked(agent.store.connection, config.queuePrefix, queue) } : {}),
      log: log.child({ node, component: 'placeholder-report' }),
    });
    // After the worker closed (no job writes a journal any more): the host state goes on an uninstall only.
    const worker = {
      ...agent,
      close: async () => {
        await agent.close();
        await removeHostStateIfUninstalling({
          host,
          stateDir: config.stateDir,
          enabled: config.removeHostStateOnUninstall,
          marked: reports.marked,
          log: log.child({ node, component: 'host-state' }),
        });
      },
    };
    return {
      worker,
      alongside: [{ close: () => checks.stop() }, { close: () => readonlyScan.stop() }, { close: () => reports.stop() }],
      started: {
        msg: 'node agent started',
        fields: { node, defaultMode: config.defaultMode, modes: config.runbookModes, labels: kube.inCluster ? 'api-server' : 'NODE_LABELS' },
      },
    };
  },
);
