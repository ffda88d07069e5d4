import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { AppError } from '../errors.js';
import { ObjectStoreFault } from '../persistence/storage-faults.js';
import { isSourceKey } from './keys.js';
import { PingCache } from './ping-cache.js';
import { CallTimeout, isMissingObject, objectStoreFault } from './s3-faults.js';
import { readWholeStreamed } from './read-whole.js';
import { RecentBlobs } from './recent-blobs.js';
import type { SourceStore, StoredBlob } from './source-store.js';

export interface S3SourceStoreOptions {
  /** An S3-compatible endpoint; unset: AWS's own for the region. */
  endpoint?: string;
  region: string;
  bucket: string;
  /** Prepended to every object name: empty, or folders each ending in `/`. */
  prefix: string;
  forcePathStyle: boolean;
  /** How long a pre-signed GET URL stays valid. */
  presignExpiryMs: number;
  /** Bound on each call, retries included (a blob's body: on each silence while it streams). */
  timeoutMs: number;
  /** How long a ping's answer is trusted before the bucket is asked again. */
  pingEveryMs?: number;
  now?: () => number;
}

/**
 * The `s3` backend: one object `<prefix><key>.tar.gz` per blob in an S3-compatible bucket. The
 * control plane serves none of it; an agent gets a short-lived pre-signed GET URL (`presignGet`).
 * Credentials come from the SDK's default chain and appear in no log or error: a failed call
 * becomes an ObjectStoreFault naming only the error's code and status, which StorageHealth turns
 * into `503 storage_unavailable` for the source store.
 */
export function createS3SourceStore(opts: S3SourceStoreOptions): SourceStore {
  const client = new S3Client({
    region: opts.region,
    endpoint: opts.endpoint,
    forcePathStyle: opts.forcePathStyle,
    // Checksums only where S3 requires them: S3-compatible stores differ in which they take.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      connectionTimeout: Math.min(opts.timeoutMs, 5_000),
      requestTimeout: opts.timeoutMs,
    },
  });
  const { bucket, prefix } = opts;
  const objectKey = (key: string): string => `${prefix}${key}${BLOB_SUFFIX}`;
  const health = new PingCache(opts.pingEveryMs ?? 1_000, opts.now ?? Date.now);
  const recent = new RecentBlobs(RECENT, opts.now);

  /** One call, bounded; any failure is a fault that also marks the store down. */
  async function call<T>(run: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      return await bounded(opts.timeoutMs, run);
    } catch (err) {
      throw health.failed(objectStoreFault(err));
    }
  }

  // HeadBucket: cheap, and it fails as a write would on a missing bucket or refused credentials.
  health.watch(() =>
    call((abortSignal) => client.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal })),
  );

  const store: SourceStore = {
    backend: 's3',

    async put(key, data) {
      requireKey(key);
      await call((abortSignal) =>
        client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: objectKey(key),
            Body: data,
            ContentLength: data.length,
            // The store refuses a body that arrived different from what was sent.
            ContentMD5: createHash('md5').update(data).digest('base64'),
            ContentType: 'application/gzip',
          }),
          { abortSignal },
        ),
      );
      health.passed();
      recent.add(key, data);
    },

    async open(key) {
      if (!isSourceKey(key)) return undefined;
      // Bounded until the answer's head arrives; the body then streams under the socket's timeout.
      const found = await call((abortSignal) =>
        client
          .send(new GetObjectCommand({ Bucket: bucket, Key: objectKey(key) }), { abortSignal })
          .catch(missingAsUndefined),
      );
      if (found === undefined) return undefined;
      if (!(found.Body instanceof Readable)) throw new ObjectStoreFault('answered without a body');
      return found.Body;
    },

    async readWhole(key, max) {
      return recent.get(key, max) ?? readWholeStreamed(store, key, max);
    },

    async size(key) {
      if (!isSourceKey(key)) return undefined;
      const head = await call((abortSignal) =>
        client
          .send(new HeadObjectCommand({ Bucket: bucket, Key: objectKey(key) }), { abortSignal })
          .catch(missingAsUndefined),
      );
      return head?.ContentLength;
    },

    async remove(key) {
      requireKey(key);
      recent.drop(key);
      // S3 answers a delete of a missing object with success: nothing to tell apart.
      await call((abortSignal) =>
        client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(key) }), {
          abortSignal,
        }),
      );
    },

    ping: () => health.fault() === undefined,

    probe() {
      const fault = health.fault();
      if (fault) throw fault;
    },

    async list() {
      const blobs: StoredBlob[] = [];
      let token: string | undefined;
      do {
        const page = await call((abortSignal) =>
          client.send(
            new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
            { abortSignal },
          ),
        );
        for (const object of page.Contents ?? []) {
          const name = object.Key?.slice(prefix.length) ?? '';
          if (!name.endsWith(BLOB_SUFFIX)) continue;
          const key = name.slice(0, -BLOB_SUFFIX.length);
          // Anything else under the prefix (an operator's files, a folder) is not a blob.
          if (!isSourceKey(key)) continue;
          blobs.push({
            key,
            modifiedAt: object.LastModified?.getTime() ?? 0,
            bytes: object.Size ?? 0,
          });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
      return blobs;
    },

    async presignGet(key) {
      requireKey(key);
      const command = new GetObjectCommand({ Bucket: bucket, Key: objectKey(key) });
      // Signing is local (no call to the store); only the credentials' lookup may fail.
      return getSignedUrl(client, command, {
        expiresIn: Math.max(1, Math.round(opts.presignExpiryMs / 1000)),
      }).catch((err: unknown) => {
        throw objectStoreFault(err);
      });
    },
  };
  return store;
}

const BLOB_SUFFIX = '.tar.gz';
/** What a deploy's inject reads back right after the upload is kept in memory (RecentBlobs). */
const RECENT = { maxBlob: 1024 * 1024, maxTotal: 8 * 1024 * 1024, ttlMs: 60_000 };

function requireKey(key: string): void {
  if (!isSourceKey(key)) {
    throw new AppError(400, 'bad_request', `invalid source key ${JSON.stringify(key)}`);
  }
}

function missingAsUndefined(err: unknown): undefined {
  if (isMissingObject(err)) return undefined;
  throw err;
}

/** Runs `run` with a signal that aborts it after `ms`, retries and all. */
async function bounded<T>(ms: number, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new CallTimeout(ms)), ms);
  try {
    return await run(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}
