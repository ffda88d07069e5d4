import http from 'node:http';
import { authorized, controlHandler, digest, readJson, type ControlHandlers } from './control.js';
import { errorText } from './diag.js';
import type { PodEvents } from './pod-events.js';

/**
 * A pod agent's control port. `GET /ready` (the readiness probe) is open; `POST /enroll`, once,
 * needs the template's enroll key and sets this sandbox's own token; everything else (the control
 * API of a bwrap sandbox, plus `GET /events`) needs that token. A pod that is not enrolled yet
 * answers nothing else.
 */
export function createPodControl(
  enrollKey: string,
  handlers: ControlHandlers,
  events: PodEvents,
  onEnrolled: (token: string) => void,
): http.Server {
  const key = digest(enrollKey);
  let enrolling = false;
  let control: http.RequestListener | undefined;
  let token: Buffer | undefined;
  return http.createServer((req, res) => {
    const route = `${req.method} ${new URL(req.url ?? '/', 'http://agent').pathname}`;
    if (route === 'GET /ready') return json(res, 200, { ready: true, enrolled: !!control });
    if (route === 'POST /enroll') {
      if (!authorized(req.headers.authorization, key)) {
        return json(res, 401, { error: 'unauthorized' });
      }
      // Taken at once, not when the body arrives: two enrolls in flight cannot both win.
      if (enrolling) return json(res, 409, { error: 'already enrolled' });
      enrolling = true;
      readJson(req).then(
        (body) => {
          const next = (body as { token?: unknown }).token;
          if (typeof next !== 'string' || next.length < 32) {
            enrolling = false;
            return json(res, 400, { error: 'token must be a string of at least 32 characters' });
          }
          token = digest(next);
          control = controlHandler(next, handlers);
          onEnrolled(next);
          json(res, 200, { ok: true });
        },
        (err: unknown) => {
          enrolling = false;
          json(res, 400, { error: errorText(err) });
        },
      );
      return;
    }
    if (!control || !token) return json(res, 401, { error: 'not enrolled' });
    if (route === 'GET /events') {
      if (!authorized(req.headers.authorization, token)) {
        return json(res, 401, { error: 'unauthorized' });
      }
      return events.attach(req.socket);
    }
    control(req, res);
  });
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
