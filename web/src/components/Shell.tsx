import { useEffect, useState } from 'preact/hooks';
import { onLiveStatus, startEvents } from '../lib/events';
import { useRoute, type Route } from '../lib/route';
import { applyTheme, nextTheme, storedTheme } from '../lib/theme';
import type { AuthInfo, Whoami } from '../lib/types';
import { AppPage } from '../pages/AppPage';
import { AppsPage } from '../pages/AppsPage';
import { AuditPage } from '../pages/AuditPage';
import { DeployPage } from '../pages/DeployPage';
import { DepartmentsPage } from '../pages/DepartmentsPage';
import { UsersPage } from '../pages/UsersPage';

interface Props {
  auth: AuthInfo;
  me: Whoami;
  onSignOut: () => void;
}

export function Shell({ auth, me, onSignOut }: Props) {
  const route = useRoute();
  const [live, setLive] = useState(false);
  const [theme, setTheme] = useState(storedTheme);
  // A click on the link of the page already shown starts it afresh (a new deploy form).
  const [generation, setGeneration] = useState(0);
  const admin = me.role === 'admin';
  useEffect(() => {
    const off = onLiveStatus(setLive);
    const stop = startEvents();
    return () => {
      off();
      stop();
    };
  }, []);
  useEffect(() => {
    const titled = document.querySelector('main h1');
    document.title = titled?.textContent ? `${titled.textContent} · Slipway` : 'Slipway';
  });

  const links: [Route['page'], string, string][] = [
    ['apps', '#/', 'Apps'],
    ['deploy', '#/deploy', 'Deploy'],
  ];
  if (admin) {
    links.push(['audit', '#/admin/audit', 'Audit'], ['users', '#/admin/users', 'Users']);
    links.push(['departments', '#/admin/departments', 'Departments']);
  }
  const current = route.page === 'app' ? 'apps' : route.page;
  const switchTheme = () => {
    const next = nextTheme(theme);
    applyTheme(next);
    setTheme(next);
  };

  return (
    <>
      <a class="skip" href="#content">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          Slipway
        </a>
        <nav aria-label="Main">
          {links.map(([page, href, label]) => (
            <a
              key={page}
              href={href}
              aria-current={current === page ? 'page' : undefined}
              onClick={() => (location.hash || '#/') === href && setGeneration(generation + 1)}
            >
              {label}
            </a>
          ))}
        </nav>
        <div class="who">
          <span class={live ? 'live on' : 'live'} title={live ? 'Live updates on' : 'Reconnecting'}>
            {live ? 'Live' : 'Offline'}
          </span>
          <button type="button" class="ghost" onClick={switchTheme}>
            Theme: {theme === 'system' ? 'auto' : theme}
          </button>
          <span class="user">
            {me.name}
            {admin ? ' (admin)' : ''}
          </span>
          {auth.enabled && (auth.mode === 'apikey' || auth.mode === 'oidc') && (
            <button type="button" class="ghost" onClick={onSignOut}>
              Sign out
            </button>
          )}
        </div>
      </header>
      <main id="content" tabIndex={-1}>
        <Page key={generation} route={route} me={me} />
      </main>
    </>
  );
}

function Page({ route, me }: { route: Route; me: Whoami }) {
  const admin = me.role === 'admin';
  switch (route.page) {
    case 'apps':
      return <AppsPage admin={admin} />;
    case 'deploy':
      return <DeployPage />;
    case 'app':
      return <AppPage key={route.id} id={route.id} />;
    case 'audit':
      return admin ? <AuditPage /> : <NotAdmin />;
    case 'users':
      return admin ? <UsersPage /> : <NotAdmin />;
    case 'departments':
      return admin ? <DepartmentsPage /> : <NotAdmin />;
  }
}

const NotAdmin = () => (
  <>
    <h1>Admins only</h1>
    <p>This page needs the admin role.</p>
  </>
);
