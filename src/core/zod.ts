import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

// The one zod of src/core, src/adapters and workers/: zod's mini API (functions, not methods:
// `z.optional(z.string().check(z.maxLength(500)))`). The node agent runs on every node and holds
// whatever zod API it imports; the mini API is a fraction of the classic one's memory for the same
// schemas (bench/README.md, "The agent against its floor"; docs/decisions/0004). The control plane
// may build its own schemas with the classic API; the shared schemas below are zod schemas to it
// all the same (parse, safeParse, z.infer).
//
// A schema that the node agent's start path imports but only work parses (a job, a seal, a control
// record, a runbook's record on disk) is written `z.lazy(() => ...)`: built with its first parse,
// so an idle agent holds a wrapper, not the schema (test/unit/repo/architecture/agent-start-imports.test.ts).
//
// English messages, as the classic API sets by itself: the mini API sets no locale, and a
// configuration error or a refused job must read the same whichever API built the schema.
config(en());

export { z } from 'zod/mini';
