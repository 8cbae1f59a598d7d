import { createRequire } from 'node:module';
import type * as Crypto from 'node:crypto';

// node:crypto taken with require, not `import`: Node's ES module facade of a builtin reads every
// export, and node:crypto's lazy `webcrypto` and `subtle` getters then load Web Crypto, which the
// node agent never uses and would hold for good (bench/README.md, "The agent against its floor").
// Same functions, same types; only what loads differs. Code on the node agent's path takes
// node:crypto from here (test/unit/repo/architecture).
const crypto = createRequire(import.meta.url)('node:crypto') as typeof Crypto;

export const { createHash, createHmac, createPrivateKey, createPublicKey, hash, randomUUID, sign, timingSafeEqual, verify, X509Certificate } = crypto;
