import { z } from 'zod';
import { accessField, appIdArg } from '../schemas.js';
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

const PROTECTS = {
  private:
    'The app is private: its URL answers 401 without a grant, and this link (with its password, ' +
    'if any) is how visitors get one, until the link expires or is revoked.',
  public:
    'The app is public: anyone with its URL can open it, so the link (and its password, if any) ' +
    'protects only the link page. Make the app private (deploy_app with access "private") to ' +
    'protect the app itself.',
} as const;

const tokenArg = z
  .string()
  .describe('The token of the link, as create_share_link or list_share_links returned it.');

export const createShareLink = defineTool({
  name: 'create_share_link',
  title: 'Create a share link',
  description:
    'Creates a public link to one of your apps that anyone can open without an account, ' +
    'optionally protected by a password and with an expiry. Use it to show an app to people; ' +
    'the link shows the app name, status and live URL. For a private app the link is the way ' +
    'in: opening it (after its password) lets the visitor into the app until the link expires ' +
    'or is revoked. For a public app anyone with the app URL gets in anyway, so a password ' +
    'protects only the link page: deploy with access "private" to protect the app itself.',
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
  output: {
    ...linkShape,
    app_access: accessField.describe(
      "The app's access now: private (the link lets visitors in) or public (anyone can open it).",
    ),
    protects: z
      .string()
      .describe('What the link does and does not protect, to tell the user as it is.'),
  },
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run({ app_id, password, expires_in }, { identity, services }) {
    const link = await services.shares.create(identity, app_id, { password, expires_in });
    const access = services.apps.get(identity, app_id).access ?? 'public';
    return { ...link, app_access: access, protects: PROTECTS[access] };
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
