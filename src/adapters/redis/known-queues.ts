// The receiver records every queue it has put a job on, so the jobs API can list them without
// scanning Redis keys. Node queues appear as nodes get their first job.
export const knownQueuesKey = (prefix: string): string => `${prefix}:vm:queues`;
