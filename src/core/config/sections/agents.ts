import { z } from '../../zod.ts';
import { AGENTS, section, setting } from '../setting.ts';
import { NonEmpty, Port } from '../types.ts';

export const agents = section({
  title: 'Agents',
  doc: 'What the node agent and the cluster worker share: their probe server, where they keep state, and enrolment with the receiver.',
  settings: {
    probePort: setting({
      env: 'PROBE_PORT',
      readers: AGENTS,
      type: () => z._default(Port, 9464),
      doc: 'Port of their probe server (/healthz, /readyz, /metrics; src/adapters/observability/probe-server.ts). 0: any free port (tests).',
    }),
    probeListenAddress: setting({
      env: 'PROBE_LISTEN_ADDRESS',
      readers: AGENTS,
      type: () => z._default(NonEmpty, '0.0.0.0'),
      doc: 'Address the probe server binds to (the kubelet probes the pod IP).',
    }),
    stateDir: setting({
      env: 'STATE_DIR',
      readers: AGENTS,
      type: () => z._default(z.string(), '/var/lib/volume-medic'),
      doc: 'Where an agent keeps what must survive restarts (placeholder records, journals, work and controls already seen).',
    }),
    enrolUrl: setting({
      env: 'ENROL_URL',
      readers: AGENTS,
      type: () => z.optional(z.url({ protocol: /^https?$/ })),
      doc: "The receiver's base URL (https://...). Set, the process holds no issuer root: at start it enrols (POST /v1/enrol with its projected service-account token) and gets only the work keys of its own queue (src/core/trust/work-keys.ts), and the Redis user of its node when the receiver manages them. Needs CONTROL_VERIFY_CERT_FILE. The chart sets it.",
    }),
    enrolTokenFile: setting({
      env: 'ENROL_TOKEN_FILE',
      readers: AGENTS,
      type: () => z._default(NonEmpty, '/var/run/secrets/volume-medic/enrol/token'),
      doc: 'The projected service-account token (audience ENROL_AUDIENCE), read again at every enrolment.',
    }),
    enrolCaFile: setting({
      env: 'ENROL_CA_FILE',
      readers: AGENTS,
      type: () => z.optional(NonEmpty),
      doc: "PEM certificate(s) the receiver's HTTPS certificate must chain to; unset: the system's.",
    }),
  },
});
