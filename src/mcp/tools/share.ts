import { z } from 'zod';
import { appIdArg } from '../schemas.js';
import { defineTool } from '../tool.js';

/** The share-link tools: the MCP twins of /v1/apps/{id}/share-links and DELETE /api/share-links. */

const linkShape = {
  token: z.string().describe('The secret of the link; revoke_share_link takes it.'),
  app_id: z.string().describe('The app the link shows.'),
  has_password: z.boolean().describe('True when visitors must enter the password.'),
  expires_in: z.string().optional().describe('The lifetime asked for at creation, if any.'),
  expires_at: z
    .string()
    .nullable()
    .describe('ISO 8601 UTC time the link stops working; null when it never expires.'),
  created_at: z.string().describe('ISO 8601 UTC creation time.'),
  url: z.string().describe('The public page of the link, to hand to people without an account.'),
};

const tokenArg = z
  .string()
  .describe('The token of the link, as create_share_link or list_share_links returned it.');

export const createShareLink = defineTool({
  name: 'create_share_link',
  title: 'Create a share link',
  description:
    'Creates a public link to one of your apps that anyone can open without an account, ' +
    'optionally protected by a password and with an expiry. Use it to show an app to people; ' +
    'the link shows the app name, status and live URL.',
  input: {
    app_id: appIdArg,
    password: z
      .string()
      .optional()
      .describe('Visitors must enter it to open the link; omit for an open link.'),
    expires_in: z
      .string()
      .optional()
      .describe('Lifetime as a Go duration, e.g. "30m", "24h" or "168h"; omit for no expiry.'),
  },
  output: linkShape,
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run({ app_id, password, expires_in }, { identity, services }) {
    return services.shares.create(identity, app_id, { password, expires_in });
  },
});

export const listShareLinks = defineTool({
  name: 'list_share_links',
  title: 'List share links',
  description:
    "Lists an app's working share links (not revoked, not expired), newest first. Use it to " +
    'find a token to revoke or a URL to hand out again. Passwords are never shown.',
  input: { app_id: appIdArg },
  output: {
    items: z.array(z.object(linkShape)).describe('The links, newest first.'),
    total: z.number().int().describe('How many links there are.'),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run({ app_id }, { identity, services }) {
    return services.shares.list(identity, app_id);
  },
});

export const revokeShareLink = defineTool({
  name: 'revoke_share_link',
  title: 'Revoke a share link',
  description:
    'Revokes a share link: from now on it answers not found. Use it when a link leaked or is no ' +
    'longer needed. The app itself is not touched.',
  input: { token: tokenArg },
  output: {
    token: z.string().describe('The revoked link.'),
    revoked: z.literal(true).describe('Always true: the link no longer works.'),
  },
  annotations: { destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run({ token }, { identity, services }) {
    services.shares.revoke(identity, token);
    return { token, revoked: true as const };
  },
});
