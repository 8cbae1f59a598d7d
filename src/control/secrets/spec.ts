import { z } from 'zod';
import { COMPONENTS } from '../../adapters/kube/rbac.ts';

// What the chart's hook Job makes (the chart renders this as JSON, SECRETS_SPEC; no value in it is
// secret or random, so `helm template` prints the same every time). One item per Secret (or
// Secret and ConfigMap) the chart makes when the operator names none of their own.

const Name = z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/);
const Labels = z.record(z.string(), z.string());

export const SecretItem = z.discriminatedUnion('make', [
  /** A random token of letters and digits under `key` (the webhook token). */
  z.object({ make: z.literal('token'), secret: Name, key: z.string().min(1), length: z.number().int().min(16).max(256), labels: Labels }),
  /** 32 random bytes, base64, in the file `file` (a signing key: docs/signed-work.md). */
  z.object({ make: z.literal('signing-key'), secret: Name, file: z.string().min(1), labels: Labels }),
  /**
   * A CA (its key not kept) and a server certificate for dnsNames and ipAddresses (type
   * kubernetes.io/tls with ca.crt); the CA alone in caConfigMap when named. Made again when the
   * certificate lacks a wanted name.
   */
  z.object({
    make: z.literal('tls'),
    secret: Name,
    caConfigMap: Name.optional(),
    caName: z.string().min(1),
    commonName: z.string().min(1),
    dnsNames: z.array(z.string().min(1)),
    ipAddresses: z.array(z.string()),
    days: z.number().int().positive(),
    labels: Labels,
  }),
  /** The control signing key (ECDSA P-256, `control.key`) and its self-signed certificate in configMap (`control.crt`). */
  z.object({
    make: z.literal('control-signing'),
    secret: Name,
    configMap: Name,
    commonName: z.string().min(1),
    days: z.number().int().positive(),
    labels: Labels,
  }),
  /**
   * One Redis user per process with a random password (its Secret: url, username, password), and
   * the bundled Redis's ACL file from template with their hashes (aclSecret, `users.acl`), which
   * is rewritten whenever it differs (a new prefix, a new template).
   */
  z.object({
    make: z.literal('redis-users'),
    aclSecret: Name,
    address: z.string().min(1),
    prefix: z.string().min(1),
    template: z.string().min(1),
    labels: Labels,
    users: z.array(z.object({ component: z.enum(COMPONENTS), secret: Name, username: z.string().min(1), labels: Labels })).length(COMPONENTS.length),
  }),
]);
export type SecretItem = z.infer<typeof SecretItem>;

export const SecretsSpec = z.object({ version: z.literal(1), namespace: Name, items: z.array(SecretItem) });
export type SecretsSpec = z.infer<typeof SecretsSpec>;
