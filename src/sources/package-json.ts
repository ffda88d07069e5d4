import { badRequest } from '../errors.js';

/**
 * Parses the root package.json. A file that is not a JSON object is refused at upload: npm could
 * not run it either, and the message says what is wrong while the user still has the file open.
 */
export function readPackageJson(body: Buffer): Record<string, unknown> {
  // Editors on Windows still write a BOM; npm tolerates it, JSON.parse does not.
  const text = body.toString('utf8').replace(/^\uFEFF/, '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw badRequest(`package.json is not valid JSON: ${reason}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw badRequest('package.json must hold a JSON object');
  }
  return parsed as Record<string, unknown>;
}
