import { isIP } from 'node:net';

/**
 * The public addresses of the control plane and its apps (design.md §5). The apps domain is
 * `server.appsDomain`, else the host of the base URL (an IP address there means `localhost`, since
 * `<name>.127.0.0.1` is no host name): base `http://localhost:8080` → `http://<name>.localhost:8080`.
 */
export class PublicUrls {
  private base = '';
  private scheme = 'http:';
  private port = '';
  private domain = '';

  constructor(private readonly appsDomainSetting?: string) {}

  /** Set once the listener is up (the port may have been chosen by the OS). */
  setBase(baseURL: string): void {
    const url = new URL(baseURL);
    this.base = baseURL.replace(/\/+$/, '');
    this.scheme = url.protocol;
    this.port = url.port;
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.domain = (this.appsDomainSetting ?? (isIP(host) ? 'localhost' : host)).toLowerCase();
  }

  get baseURL(): string {
    return this.base;
  }

  get appsDomain(): string {
    return this.domain;
  }

  appUrl(name: string): string {
    return `${this.scheme}//${name}.${this.domain}${this.port ? `:${this.port}` : ''}`;
  }

  /** The app name a Host header addresses, or undefined when it addresses the control plane. */
  appForHost(hostHeader: string | undefined): string | undefined {
    if (!hostHeader || !this.domain) return undefined;
    const host = hostHeader.toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
    const suffix = `.${this.domain}`;
    if (!host.endsWith(suffix)) return undefined;
    const name = host.slice(0, -suffix.length);
    return APP_LABEL.test(name) ? name : undefined;
  }
}

const APP_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
