import { z } from '../../../src/core/zod.ts';
import { DEVICE_PATTERNS } from '../../../src/core/catalogue/names.ts';

// What we remember about a placeholder, on the host, so an agent restart (or a new agent
// version) still knows which loop device and link are ours. Parsed when read back: the state
// directory is a boundary like any other.

export const PlaceholderRecord = z.lazy(() =>
  z.object({
    version: z.literal(1),
    pv: z.string(),
    /** The PV's spec.local.path, a /dev/disk/by-* link. */
    path: z.string(),
    /** The missing disk's WWN (lower-case hex). */
    wwn: z.string(),
    loop: z.string().check(z.regex(DEVICE_PATTERNS.loop)),
    /** Host path of the backing image. */
    image: z.string(),
    createdAt: z.string(),
    jobId: z.string(),
    /**
     * WWNs of the disks present when the placeholder was placed. A disk not among them that
     * appears while ours stays missing is most likely its replacement: the PV must be recreated.
     */
    disksAtPlacement: z.array(z.string()),
  }),
);
export type PlaceholderRecord = z.infer<typeof PlaceholderRecord>;
