import { z } from '../../zod.ts';
import { EVERY_PROCESS, section, setting } from '../setting.ts';
import { Flag, NonEmpty } from '../types.ts';

export const trust = section({
  title: 'Trust',
  doc: 'Every job and operator control is sealed by the process that issues it and verified before an agent acts (src/core/trust).',
  settings: {
    signingKeysDir: setting({
      env: 'SIGNING_KEYS_DIR',
      readers: EVERY_PROCESS,
      type: () => z.optional(NonEmpty),
      doc: 'Directory of signing keys (a mounted Secret), one file per key named `<role>.<key id>` (roles: receiver, cluster-worker, node-agent), each at least 32 random bytes in base64. Every job and operator control is sealed (HMAC-SHA256) by the role that issues it and verified before an agent acts. Required unless ALLOW_UNSIGNED_WORK=true.',
    }),
    signingKeyId: setting({
      env: 'SIGNING_KEY_ID',
      readers: EVERY_PROCESS,
      type: () => z.optional(z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/))),
      doc: 'The key id this process seals with (rotation); default the greatest id of its role.',
    }),
    allowUnsignedWork: setting({
      env: 'ALLOW_UNSIGNED_WORK',
      readers: EVERY_PROCESS,
      type: () => z._default(Flag, false),
      doc: 'Start without signing keys, and accept work and controls without a seal (a bad seal is still refused). For development and for rolling signing out.',
    }),
    workSealTtlSeconds: setting({
      env: 'WORK_SEAL_TTL_SECONDS',
      readers: EVERY_PROCESS,
      type: () => z._default(z.coerce.number().check(z.int(), z.positive()), 86_400),
      doc: 'How long sealed work stays valid (must exceed APPROVAL_TTL_SECONDS).',
    }),
    controlSigningKeyFile: setting({
      env: 'CONTROL_SIGNING_KEY_FILE',
      readers: EVERY_PROCESS,
      type: () => z.optional(NonEmpty),
      doc: "The receiver's ECDSA P-256 key that signs operator controls (modes, pauses, approval decisions), so a node that can read the receiver's HMAC key (agents verify work with it) still cannot forge a control (src/core/trust/control-keys.ts). Needs CONTROL_VERIFY_CERT_FILE. Unset: controls are sealed with the receiver's HMAC key like work. The chart sets it.",
    }),
    controlVerifyCertFile: setting({
      env: 'CONTROL_VERIFY_CERT_FILE',
      readers: EVERY_PROCESS,
      type: () => z.optional(NonEmpty),
      doc: 'The certificate(s) operator controls are checked with (see CONTROL_SIGNING_KEY_FILE); set, an HMAC-sealed control is refused. The chart sets it.',
    }),
  },
});
