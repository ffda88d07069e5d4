import { useEffect, useState } from 'preact/hooks';

/** The dashboard's pages, addressed by the URL's hash so `/` is the only page the server serves. */
export type Route =
  | { page: 'apps' }
  | { page: 'deploy' }
  | { page: 'app'; id: string }
  | { page: 'audit' }
  | { page: 'users' }
  | { page: 'departments' };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  const app = /^\/apps\/([a-z0-9-]{1,63})$/.exec(path);
  if (app?.[1]) return { page: 'app', id: app[1] };
  if (path === '/deploy') return { page: 'deploy' };
  if (path === '/admin/audit') return { page: 'audit' };
  if (path === '/admin/users') return { page: 'users' };
  if (path === '/admin/departments') return { page: 'departments' };
  return { page: 'apps' };
}

export const hrefOf = (route: Route): string =>
  route.page === 'app'
    ? `#/apps/${route.id}`
    : route.page === 'apps'
      ? '#/'
      : route.page === 'deploy'
        ? '#/deploy'
        : `#/admin/${route.page}`;

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', changed);
    // Effects run a frame after the render: a hash changed in between fired no event we heard.
    changed();
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}

export function go(route: Route): void {
  location.hash = hrefOf(route);
}
