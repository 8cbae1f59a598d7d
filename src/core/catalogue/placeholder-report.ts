import { z } from '../zod.ts';
import { DEVICE_PATTERNS, DiskLinkPath, NodeName, ObjectName } from './names.ts';

// What a node agent says about the Local PV placeholders attached on its node: one report per
// node, replaced whole at each of its placeholder checks (PLACEHOLDER_CHECK_SECONDS) and at start.
// It lives in Redis under the node's own queue (src/adapters/jobstore/placeholder-reports.ts), so
// the receiver parses it again: a node's Redis user may write anything there.

const text = () => z.string().check(z.maxLength(500));

const reportedPlaceholder = () =>
  z.object({
    pv: ObjectName,
    /** The PV's spec.local.path, the /dev/disk/by-* link the placeholder stands in at. */
    path: DiskLinkPath,
    loop: z.string().check(z.regex(DEVICE_PATTERNS.loop)),
    /** When it was placed (the record's createdAt). */
    since: z.string().check(z.maxLength(64)),
    /** Whether the loop device is attached to our image now (losetup); null: not read. */
    attached: z.nullable(z.boolean()),
    /** A block device with the recorded WWN is in sysfs (the release verifies more: disk-back.ts). */
    diskBack: z.boolean(),
    /** What holds the loop device (open, mounted, stacked), in words; empty: nothing; null: not read. */
    heldBy: z.nullable(z.array(text()).check(z.maxLength(20))),
  });
export type ReportedPlaceholder = z.infer<ReturnType<typeof reportedPlaceholder>>;

// Lazy: the node agent imports this module on its start path but only the receiver parses a report (src/core/zod.ts).
export const PlaceholderReport = z.lazy(() =>
  z.object({
    version: z.literal(1),
    node: NodeName,
    /** When the agent looked (ISO 8601). */
    at: z.string().check(z.maxLength(64)),
    placeholders: z.array(reportedPlaceholder()).check(z.maxLength(1000)),
    /** Record files in the state directory that do not parse: a placeholder may be behind each. */
    unreadable: z.array(text()).check(z.maxLength(100)),
  }),
);
export type PlaceholderReport = z.infer<typeof PlaceholderReport>;
