import { S3ServiceException } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { isStorageFault, storageUnavailable } from '../../src/persistence/storage-faults.js';
import { CallTimeout, isMissingObject, objectStoreFault } from '../../src/sources/s3-faults.js';

/** An SDK service error as the client throws it: a name, a status, and a message that may quote. */
const serviceError = (
  name: string,
  status: number,
  message = 'see https://x/?X-Amz-Signature=ab',
) =>
  new S3ServiceException({
    name,
    $fault: 'client',
    $metadata: { httpStatusCode: status },
    message,
  });

describe('what an S3 failure means', () => {
  it('tells a missing object from a missing bucket', () => {
    expect(isMissingObject(serviceError('NoSuchKey', 404))).toBe(true);
    expect(isMissingObject(serviceError('NotFound', 404))).toBe(true);
    expect(isMissingObject(serviceError('NoSuchBucket', 404))).toBe(false);
    expect(isMissingObject(serviceError('AccessDenied', 403))).toBe(false);
    expect(isMissingObject(new Error('NoSuchKey'))).toBe(false);
  });

  it.each([
    [
      serviceError('AccessDenied', 403),
      'the object store refused the call (AccessDenied, HTTP 403)',
    ],
    [serviceError('SlowDown', 503), 'the object store refused the call (SlowDown, HTTP 503)'],
    [
      Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:9000'), { code: 'ECONNREFUSED' }),
      'the object store could not be reached (ECONNREFUSED)',
    ],
    [new CallTimeout(3_000), 'the object store did not answer within 3000 ms'],
    [
      Object.assign(new Error('aborted'), { cause: new CallTimeout(500) }),
      'the object store did not answer within 500 ms',
    ],
    [
      Object.assign(new Error('Could not load credentials'), { name: 'CredentialsProviderError' }),
      'the object store has no credentials to use (see AWS_ACCESS_KEY_ID)',
    ],
    [
      Object.assign(new Error('x'), { name: 'Weird name with https://host/path' }),
      'the object store failed (error)',
    ],
  ])('%s is a storage fault, told by code and status only', (err, message) => {
    const fault = objectStoreFault(err);
    expect(fault.message).toBe(message);
    expect(isStorageFault(fault)).toBe(true);
    expect(fault.message).not.toMatch(/https?:|Signature|10\.0\.0\.1/);
  });

  it('becomes the 503 that names the source store', () => {
    const answer = storageUnavailable(
      'source store',
      objectStoreFault(serviceError('AccessDenied', 403)),
    );
    expect(answer.status).toBe(503);
    expect(answer.toBody()).toMatchObject({
      code: 'storage_unavailable',
      message:
        'the source store cannot write: the object store refused the call (AccessDenied, HTTP 403); retry shortly',
      details: { store: 'source store', retryAfterSeconds: 5 },
    });
  });
});
