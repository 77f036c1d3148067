/**
 * The app's access tokens. They come from the `auth_session` cookie through a same-origin POST
 * (docs/web-app.md), live in this module's memory only (never in Web Storage or a URL), and are
 * renewed before they expire. One token per scope: the user (`null`) or a team id.
 */
export type Scope = string | null;

interface Held {
  token: string;
  expiresAt: number;
}

/** Thrown once the session has ended: the page is on its way to the login flow. */
export class SignedOut extends Error {
  constructor() {
    super('signed out');
  }
}

/** The scope the app acts as; only the choice is remembered across reloads, not a token. */
const ACTING_KEY = 'media-platform.acting-team';
let acting: Scope = localStorage.getItem(ACTING_KEY) || null;
const held = new Map<string, Held>();
const pending = new Map<string, Promise<Held>>();
const renewals = new Map<string, number>();
const listeners = new Set<() => void>();

const keyOf = (scope: Scope) => scope ?? '';

export function actingScope(): Scope {
  return acting;
}

/** Acts as a team (or the user, with null) from now on; subscribers re-read everything. */
export function setActingScope(scope: Scope): void {
  acting = scope;
  if (scope) localStorage.setItem(ACTING_KEY, scope);
  else localStorage.removeItem(ACTING_KEY);
  for (const f of listeners) f();
}

export function onScopeChange(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** Sends the browser through the login flow, back to where it is now. */
export function signIn(): never {
  const here = `${location.pathname}${location.search}`;
  location.assign(`/api/v1/auth/login?return_to=${encodeURIComponent(here)}`);
  throw new SignedOut();
}

async function request(scope: Scope): Promise<Held> {
  const res = await fetch('/api/v1/auth/token', {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-requested-with': 'fetch' },
    body: JSON.stringify(scope ? { team_id: scope } : {}),
  });
  if (res.status === 401) signIn();
  if (res.status === 404 && scope) {
    // The team is gone or the user left it: act as the user again.
    setActingScope(null);
    return request(null);
  }
  if (!res.ok) throw new Error(`could not get an access token (${res.status})`);
  const body = (await res.json()) as { access_token: string; expires_in: number };
  const token = { token: body.access_token, expiresAt: Date.now() + body.expires_in * 1000 };
  held.set(keyOf(scope), token);
  scheduleRenewal(scope, body.expires_in);
  return token;
}

/** Renews at two thirds of the lifetime, so a request never carries a token about to expire. */
function scheduleRenewal(scope: Scope, expiresIn: number): void {
  const key = keyOf(scope);
  clearTimeout(renewals.get(key));
  renewals.set(
    key,
    window.setTimeout(
      () => {
        if (scope !== acting && scope !== null) return held.delete(key);
        void refresh(scope).catch(() => held.delete(key));
      },
      Math.max(1, expiresIn * 1000 * (2 / 3)),
    ),
  );
}

function refresh(scope: Scope): Promise<Held> {
  const key = keyOf(scope);
  let p = pending.get(key);
  if (!p) {
    p = request(scope).finally(() => pending.delete(key));
    pending.set(key, p);
  }
  return p;
}

/** A valid access token for the scope (the acting one by default). */
export async function accessToken(scope: Scope = acting): Promise<string> {
  const current = held.get(keyOf(scope));
  if (current && current.expiresAt - Date.now() > 5000) return current.token;
  return (await refresh(scope)).token;
}

/** Forgets a token the API refused (expired while the machine slept): the next call gets a new one. */
export function dropToken(token: string): void {
  for (const [key, h] of held) if (h.token === token) held.delete(key);
}

/** Ends the session on the server, forgets every token, and shows the signed-out page. */
export async function signOut(): Promise<void> {
  await fetch('/api/v1/auth/logout', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'x-requested-with': 'fetch' },
  });
  held.clear();
  for (const t of renewals.values()) clearTimeout(t);
  renewals.clear();
  localStorage.removeItem(ACTING_KEY);
  location.assign('/signed-out');
}
