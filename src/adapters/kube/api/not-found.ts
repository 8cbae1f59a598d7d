// The generated client throws ApiException with the HTTP status as `code`; a 404 is an answer
// ("no such object"), everything else is a failure the caller must see.
export const isNotFound = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === 404;
