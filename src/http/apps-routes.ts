import { logLineText } from '../actors/log-ring.js';
import multipart from '@fastify/multipart';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppRegistry } from '../actors/registry.js';
import { requireIdentity } from '../auth/guards.js';
import { AppError } from '../errors.js';
import type { AppService } from '../services/app-service.js';
import { deployFailure } from '../services/deploy-failure.js';
import { appView } from '../services/app-view.js';
import type { AppSummary } from '../persistence/store.js';
import { parseMetadataJson } from '../services/deploy-metadata.js';
import { sourceTooLarge } from '../sources/tarball.js';
import { StageClock } from '../stage-clock.js';
import * as api from './api-schemas.js';

const METADATA_MAX_BYTES = 256 * 1024;
const LAST_LOG_LINES = 20;

/**
 * `/v1/deploy` and `/v1/apps*`: deploy, list, get, update, delete, suspend, resume, and cancel the
 * deploy in flight (spec §4).
 */
export function appsRoutes(service: AppService, registry: AppRegistry, maxSourceBytes: number) {
  const view = (app: AppSummary) => appView(app, registry.activity(app.id));
  return async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    // Multipart, with its hooks, only around the one route that reads it: the other routes pay
    // nothing for it, and any body but JSON is 415 there, as the spec says.
    await app.register(deployRoute(service, registry, maxSourceBytes));

    app.get('/v1/apps', { schema: api.listApps }, async (request) => {
      const page = service.list(requireIdentity(request), request.query);
      return { items: page.items.map(view), total: page.total };
    });

    app.get('/v1/apps/:id', { schema: api.getApp }, async (request) =>
      view(service.summary(requireIdentity(request), request.params.id)),
    );

    app.patch('/v1/apps/:id', { schema: api.updateApp }, async (request, reply) => {
      const { app: updated, version } = await service.update(
        requireIdentity(request),
        request.params.id,
        request.body,
      );
      if (version === undefined) return reply.status(200).send(view(updated));
      // A config release answers as a deploy does: Ready, on its way, or failed with its logs.
      const logs = registry.logs(updated.id, version).slice(-LAST_LOG_LINES).map(logLineText);
      const failure = deployFailure(updated, version, logs);
      if (failure) throw failure;
      if (updated.phase === 'Ready' && updated.url) return reply.status(200).send(view(updated));
      return reply.status(202).send({ ...view(updated), status_url: `/v1/apps/${updated.id}` });
    });

    app.delete('/v1/apps/:id', { schema: api.deleteApp }, async (request, reply) => {
      await service.delete(requireIdentity(request), request.params.id);
      return reply.status(204).send();
    });

    app.post('/v1/apps/:id/suspend', { schema: api.suspendApp }, async (request) =>
      view(await service.suspend(requireIdentity(request), request.params.id)),
    );

    // No body: the deploy or rollback in flight is the one there is.
    app.post('/v1/apps/:id/cancel', { schema: api.cancelDeploy }, async (request) =>
      view(service.cancel(requireIdentity(request), request.params.id)),
    );

    app.post('/v1/apps/:id/resume', { schema: api.resumeApp }, async (request, reply) => {
      const clock = new StageClock();
      const app = await service.resume(requireIdentity(request), request.params.id, clock);
      clock.mark('reply');
      reply.header('server-timing', clock.header());
      return view(app);
    });
  };
}

/** `POST /v1/deploy`, in its own plugin with the multipart parser. */
function deployRoute(service: AppService, registry: AppRegistry, maxSourceBytes: number) {
  return async function route(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    await app.register(multipart, {
      limits: {
        fileSize: maxSourceBytes,
        files: 2,
        fields: 4,
        fieldSize: METADATA_MAX_BYTES,
        parts: 6,
      },
    });

    app.post('/v1/deploy', { schema: api.deployApp }, async (request, reply) => {
      const identity = requireIdentity(request);
      const clock = new StageClock();
      const { metadataText, source } = await readDeployParts(request, maxSourceBytes);
      const metadata = parseMetadataJson(metadataText);
      clock.mark('parse');
      if (!source || source.length === 0) {
        throw new AppError(
          400,
          'missing_source',
          'a source part with a gzipped tarball is required',
        );
      }
      const { app: deployed, version } = await service.deploy(identity, metadata, source, clock);
      const logs = registry.logs(deployed.id, version).slice(-LAST_LOG_LINES).map(logLineText);
      const failure = deployFailure(deployed, version, logs);
      if (failure) throw failure;
      clock.mark('reply');
      reply.header('server-timing', clock.header());
      if (deployed.phase === 'Ready' && deployed.url) {
        return reply.status(200).send({ app_id: deployed.id, url: deployed.url });
      }
      return reply.status(202).send({ app_id: deployed.id, status_url: `/v1/apps/${deployed.id}` });
    });
  };
}

/**
 * Reads both parts in whatever order they come; every file stream is consumed so none hangs. Each
 * part comes once: of two sources, which one would be deployed?
 */
async function readDeployParts(
  request: FastifyRequest,
  maxSourceBytes: number,
): Promise<{ metadataText?: string; source?: Buffer }> {
  if (!request.isMultipart()) {
    throw new AppError(
      400,
      'bad_multipart',
      'deploy needs a multipart/form-data body with source and metadata parts',
    );
  }
  let metadataText: string | undefined;
  let source: Buffer | undefined;
  let oversized = false;
  const seen = new Set<string>();
  let repeated: string | undefined;
  try {
    for await (const part of request.parts()) {
      if (seen.has(part.fieldname)) repeated ??= part.fieldname;
      seen.add(part.fieldname);
      if (part.type === 'file') {
        const data = await part.toBuffer();
        if (part.fieldname === 'source') source = data;
        else if (part.fieldname === 'metadata') metadataText = data.toString('utf8');
      } else if (part.fieldname === 'metadata') {
        // A part sent as `Content-Type: application/json` arrives parsed: the same JSON, as text.
        metadataText = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
        // Cut at the field limit: what is left is not the JSON that was sent.
        if (part.valueTruncated) metadataText = undefined;
        oversized ||= part.valueTruncated;
      }
    }
  } catch (err) {
    throw multipartError(err, maxSourceBytes);
  }
  // Checked once every part is read, so no file stream is left hanging.
  if (repeated === 'source' || repeated === 'metadata') {
    throw new AppError(
      400,
      'bad_multipart',
      `the ${repeated} part is sent twice: send exactly one source and one metadata part`,
    );
  }
  if (oversized || Buffer.byteLength(metadataText ?? '') > METADATA_MAX_BYTES) {
    throw new AppError(400, 'bad_metadata', 'the metadata part is larger than 256 KiB', {
      field: 'metadata',
    });
  }
  return { metadataText, source };
}

function multipartError(err: unknown, maxSourceBytes: number): AppError {
  if (err instanceof AppError) return err;
  const code = (err as { code?: string }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return sourceTooLarge(maxSourceBytes);
  if (code === 'FST_FIELDS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_PARTS_LIMIT') {
    return new AppError(400, 'bad_multipart', 'too many parts: send exactly source and metadata');
  }
  return new AppError(400, 'bad_multipart', `malformed multipart body: ${(err as Error).message}`);
}
