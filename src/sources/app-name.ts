/**
 * The app name rule (spec §2): a DNS label, since the name is the app's subdomain. One place for
 * the API, the MCP tools, the platform info and the CLI that derives names from folders.
 */
export const APP_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
export const APP_NAME_MAX = 63;
