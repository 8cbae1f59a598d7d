import { ConfigError } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { KeyringError, keyringFor, readKeys, type Keyring } from './keyring.ts';
import type { Role } from './roles.ts';
import { sealerOf, type Sealer } from './seal.ts';
import { controlKeyring, controlSealer } from './control-keys.ts';
import type { QueueGenerations } from './key-generations.ts';

// A process's trust settings from its configuration. Fail closed: a process that must seal or
// verify and has no keys does not start (exit 2) unless ALLOW_UNSIGNED_WORK=true says so.

export interface Trust {
  role: Role;
  ring: Keyring;
  /** Seals what this process issues; undefined only with ALLOW_UNSIGNED_WORK and no key of its role. */
  sealer?: Sealer;
  /** How long sealed work stays valid. */
  ttlMs: number;
  /** Accept work and control records without a seal (a badly sealed one is still refused). */
  allowUnsigned: boolean;
  /**
   * What operator controls are sealed (the receiver) and verified with: the control key pair when
   * CONTROL_VERIFY_CERT_FILE is set (then an HMAC-sealed control is refused), else the ring above.
   */
  controls: { ring: Keyring; sealer?: Sealer };
}

/** The roles whose keys each process needs to verify what it acts on. */
const VERIFIES: Record<Role, readonly Role[]> = {
  receiver: [],
  'cluster-worker': ['receiver'],
  'node-agent': ['receiver', 'cluster-worker', 'node-agent'],
};

type TrustSettings = Pick<
  Config,
  'signingKeysDir' | 'signingKeyId' | 'allowUnsignedWork' | 'workSealTtlSeconds' | 'approvalTtlSeconds' | 'controlSigningKeyFile' | 'controlVerifyCertFile'
>;

/** What an enrolled consumer holds instead of roots (workers/engine/enrolled-keys.ts): its queue's work keys. */
export interface Enrolled {
  ring: Keyring;
  sealer: Sealer | undefined;
}

/** A key file that cannot be used is a configuration error (exit 2, the message names the file). */
function asConfigError<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof KeyringError) throw new ConfigError(err.message);
    throw err;
  }
}

/** The controls' keys (see Trust.controls); fails closed on a receiver that could verify but not sign. */
function controlTrust(config: TrustSettings, role: Role, ring: Keyring, sealer: Sealer | undefined): Trust['controls'] {
  if (!config.controlVerifyCertFile) {
    if (config.controlSigningKeyFile)
      throw new ConfigError('CONTROL_SIGNING_KEY_FILE is set without CONTROL_VERIFY_CERT_FILE: the receiver could not read back the controls it signs');
    return { ring, ...(role === 'receiver' && sealer ? { sealer } : {}) };
  }
  if (role === 'receiver' && !config.controlSigningKeyFile)
    throw new ConfigError('CONTROL_VERIFY_CERT_FILE is set but CONTROL_SIGNING_KEY_FILE is not: the receiver would write controls that no one accepts');
  const certFile = config.controlVerifyCertFile;
  return asConfigError(() => ({
    ring: controlKeyring(certFile),
    ...(role === 'receiver' && config.controlSigningKeyFile ? { sealer: controlSealer(config.controlSigningKeyFile) } : {}),
  }));
}

/**
 * An enrolled consumer's trust: it verifies its queue's work with the enrolled keys, seals its own
 * (a node agent's checks) with its enrolled key, and holds no root but, for the cluster worker,
 * its own role's (it issues rbd-unmap to every node). Controls must then be es256: an HMAC
 * control key would be a root on every node.
 */
function enrolledTrust(config: TrustSettings, role: Role, enrolled: Enrolled, ttlMs: number, generations: QueueGenerations | undefined): Trust {
  if (role === 'receiver') throw new ConfigError('the receiver does not enrol: it holds the roots');
  if (!config.controlVerifyCertFile)
    throw new ConfigError(
      "ENROL_URL is set but CONTROL_VERIFY_CERT_FILE is not: an enrolled process checks operator controls with the receiver's control certificate only",
    );
  let sealer = enrolled.sealer;
  if (role === 'node-agent' && config.signingKeysDir) {
    throw new ConfigError(
      `ENROL_URL is set and so is SIGNING_KEYS_DIR (${config.signingKeysDir}): an enrolled node agent must hold no issuer root (with one, root on this node could issue work for every node); remove the mount`,
    );
  }
  if (role === 'cluster-worker') {
    if (!config.signingKeysDir) throw new ConfigError("SIGNING_KEYS_DIR is not set: the cluster worker seals rbd-unmap with its own role's root");
    const dir = config.signingKeysDir;
    const keys = asConfigError(() => readKeys(dir));
    const foreign = [...keys.keys()].filter((k) => !k.startsWith('cluster-worker.'));
    if (foreign.length > 0)
      throw new ConfigError(`SIGNING_KEYS_DIR ${config.signingKeysDir} holds ${foreign.join(', ')}: an enrolled cluster worker holds its own role's root only`);
    const ring = asConfigError(() => keyringFor(role, keys, config.signingKeyId));
    sealer = sealerOf(generations ? { ...ring, generations } : ring);
  }
  return {
    role,
    ring: enrolled.ring,
    ...(sealer ? { sealer } : {}),
    ttlMs,
    allowUnsigned: config.allowUnsignedWork,
    controls: controlTrust(config, role, enrolled.ring, undefined),
  };
}

/**
 * `generations`: each node's credential generation (src/core/trust/key-generations.ts), for a
 * process that derives node queues' work keys from roots (the receiver, the cluster worker).
 */
export function trustFromConfig(config: TrustSettings, role: Role, enrolled?: Enrolled, generations?: QueueGenerations): Trust {
  const ttlMs = config.workSealTtlSeconds * 1000;
  if (config.workSealTtlSeconds <= config.approvalTtlSeconds) {
    throw new ConfigError(
      `WORK_SEAL_TTL_SECONDS (${config.workSealTtlSeconds}) must be longer than APPROVAL_TTL_SECONDS (${config.approvalTtlSeconds}): a job waiting for approval would expire first`,
    );
  }
  if (enrolled) return enrolledTrust(config, role, enrolled, ttlMs, generations);
  if (!config.signingKeysDir) {
    if (!config.allowUnsignedWork) {
      throw new ConfigError(
        'SIGNING_KEYS_DIR is not set: work and operator controls cannot be sealed or verified; point it at the mounted signing keys (see docs/signed-work.md), or set ALLOW_UNSIGNED_WORK=true to run without (anyone who can write to Redis can then make agents act)',
      );
    }
    const ring: Keyring = { verify: new Map() };
    return { role, ring, ttlMs, allowUnsigned: true, controls: controlTrust(config, role, ring, undefined) };
  }
  const dir = config.signingKeysDir;
  const roots = asConfigError(() => keyringFor(role, readKeys(dir), config.signingKeyId));
  const ring = generations ? { ...roots, generations } : roots;
  const sealer = sealerOf(ring);
  if (!config.allowUnsignedWork) {
    const missing = [...new Set([role, ...VERIFIES[role]])].filter((r) => ![...ring.verify.keys()].some((k) => k.startsWith(`${r}.`)));
    if (missing.length > 0)
      throw new ConfigError(
        `SIGNING_KEYS_DIR ${config.signingKeysDir} has no key of role(s) ${missing.join(', ')}: a ${role} seals with its own role's key and verifies ${VERIFIES[role].join(', ') || 'nothing'}`,
      );
  }
  return {
    role,
    ring,
    ...(sealer ? { sealer } : {}),
    ttlMs,
    allowUnsigned: config.allowUnsignedWork,
    controls: controlTrust(config, role, ring, sealer),
  };
}
