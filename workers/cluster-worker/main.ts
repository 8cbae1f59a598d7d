import { createLogger } from '../../src/adapters/observability/logger.ts';
import { runAgent } from '../agent-bootstrap/run-agent.ts';
import { clusterKube } from './cluster-kube.ts';
import { startNoAgentWatch } from './no-agent-watch.ts';
import { createClusterWorker } from './worker.ts';

// `npm run cluster-worker`: the cluster queue's runbooks (where Ceph credentials are), configured
// from the environment (agent-bootstrap/ does what both agents do: enrolment, probes, shutdown).
// It hands node halves to the nodes' queues, and watches for jobs no node agent takes.

const log = createLogger('cluster-worker');
await runAgent(
  'cluster-worker',
  log,
  () => ({ as: 'cluster-worker' }),
  async ({ config, enrolled }) => {
    const kube = clusterKube(log);
    const worker = createClusterWorker({ config, kube, enrolled, log });
    // Jobs on node queues no agent serves: here because this process is a singleton (one Event
    // and one failure per job); the receiver runs replicas.
    const noAgent = startNoAgentWatch(config, worker.store, kube.events, log);
    return { worker, alongside: [noAgent], started: { msg: 'cluster worker started', fields: { kube: kube.inCluster ? 'api-server' : 'none' } } };
  },
);
