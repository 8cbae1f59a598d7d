import { createRequire } from 'node:module';
import type * as Tls from 'node:tls';

// node:tls taken with require, not `import`: Node's ES module facade of a builtin reads every
// export, and node:tls's lazy `rootCertificates` getter then builds Node's ~120 bundled root
// certificates as strings, which the node agent (it checks Redis against its own CA) would hold
// for good. Same function, same types; only what loads differs (src/core/node-crypto.ts says the
// same of node:crypto).
export const { connect } = createRequire(import.meta.url)('node:tls') as typeof Tls;
