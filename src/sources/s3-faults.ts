import { ObjectStoreFault } from '../persistence/storage-faults.js';

/** The abort reason of a call that ran past its bound. */
export class CallTimeout extends Error {
  override name = 'CallTimeout';
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** True when S3 says the object is not there (GetObject's NoSuchKey, HeadObject's bare 404). */
export function isMissingObject(err: unknown): boolean {
  const { name, status } = describe(err);
  return name === 'NoSuchKey' || (name === 'NotFound' && status === 404);
}

/**
 * The fault a failed call is, told by the error's code and status only: an SDK error's message may
 * quote a request, and nothing of a URL, a key id or a signature belongs in a 503 or a log.
 */
export function objectStoreFault(err: unknown): ObjectStoreFault {
  if (err instanceof ObjectStoreFault) return err;
  const options = { cause: err };
  const timeout = [err, (err as { cause?: unknown } | undefined)?.cause].find(
    (e): e is CallTimeout => e instanceof CallTimeout,
  );
  if (timeout) return new ObjectStoreFault(`did not answer within ${timeout.ms} ms`, options);
  const { name, status, code } = describe(err);
  if (code !== undefined) return new ObjectStoreFault(`could not be reached (${code})`, options);
  if (name === 'AbortError' || name === 'TimeoutError') {
    return new ObjectStoreFault('did not answer in time', options);
  }
  if (name === 'CredentialsProviderError') {
    return new ObjectStoreFault('has no credentials to use (see AWS_ACCESS_KEY_ID)', options);
  }
  if (status !== undefined) {
    return new ObjectStoreFault(`refused the call (${name ?? 'error'}, HTTP ${status})`, options);
  }
  return new ObjectStoreFault(`failed (${name ?? 'error'})`, options);
}

interface Described {
  /** An SDK error's name (`NoSuchBucket`, `AccessDenied`), when it is a plain identifier. */
  name?: string;
  status?: number;
  /** A socket error's code (`ECONNREFUSED`, `ETIMEDOUT`). */
  code?: string;
}

function describe(err: unknown): Described {
  const e = err as
    { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: unknown } } | undefined;
  const name = typeof e?.name === 'string' && /^[A-Za-z][A-Za-z0-9.]{0,63}$/.test(e.name);
  const status = e?.$metadata?.httpStatusCode;
  const code = typeof e?.code === 'string' && /^E[A-Z0-9_]{1,30}$/.test(e.code);
  return {
    name: name ? (e?.name as string) : undefined,
    status: typeof status === 'number' ? status : undefined,
    code: code ? (e?.code as string) : undefined,
  };
}
