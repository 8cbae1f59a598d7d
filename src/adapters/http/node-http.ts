import { createRequire } from 'node:module';
import type * as Http from 'node:http';

// node:http loaded with require, not `import`: Node's ES module facade of a builtin reads every
// export, and node:http's lazy WebSocket, CloseEvent and MessageEvent getters then load Node's
// bundled undici, which an agent that never opens a WebSocket holds for good (part of an idle
// node agent's RSS: bench/README.md, "Figures behind the code"). Same module, same types; only what loads differs.
// Code on the agents' path takes node:http from here (test/unit/repo/architecture).
export const http = createRequire(import.meta.url)('node:http') as typeof Http;
