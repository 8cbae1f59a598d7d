// Prometheus' text format: a label value between its quotes (backslash, double quote and newline
// escaped). Every exposition we write by hand (the workers', the receiver's fleet series read
// from Redis) quotes its labels with this.
export const labelValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
