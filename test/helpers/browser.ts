/**
 * A minimal browser over real HTTP: a cookie jar that honours Path, Max-Age and Expires, and
 * redirects followed one by one, so tests can stop at any hop (the login callback, for one).
 */
interface StoredCookie {
  name: string;
  value: string;
  path: string;
  expires: number;
  attributes: string;
}

export class Browser {
  private cookies: StoredCookie[] = [];
  /** Every raw Set-Cookie header received, for attribute checks. */
  readonly setCookies: string[] = [];

  cookie(name: string): string | undefined {
    return this.cookies.find((c) => c.name === name && c.expires > Date.now())?.value;
  }

  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url);
    const headers = new Headers(init.headers);
    headers.set('accept', headers.get('accept') ?? 'text/html,application/xhtml+xml,*/*;q=0.8');
    const jar = this.cookies
      .filter((c) => c.expires > Date.now() && pathMatches(target.pathname, c.path))
      .sort((a, b) => b.path.length - a.path.length)
      .map((c) => `${c.name}=${c.value}`);
    if (jar.length) headers.set('cookie', jar.join('; '));
    const res = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const header of res.headers.getSetCookie()) this.store(target, header);
    return res;
  }

  get(url: string, headers: Record<string, string> = {}) {
    return this.request(url, { headers });
  }

  /** Submits a form as a browser does (urlencoded). */
  post(url: string, form: Record<string, string>) {
    return this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
  }

  /**
   * Follows redirects from `res` until an answer that is not one, or until the next hop would be
   * `stopAt` (a path): then that URL is returned instead of being requested.
   */
  async follow(res: Response, from: string, stopAt?: string): Promise<{ res: Response; url: string }> {
    let url = from;
    while (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).toString();
      if (stopAt && new URL(url).pathname === stopAt) return { res, url };
      res = await this.get(url);
    }
    return { res, url };
  }

  private store(target: URL, header: string) {
    this.setCookies.push(header);
    const [pair, ...attrs] = header.split(';').map((s) => s.trim());
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const attr = (n: string) =>
      attrs.find((a) => a.toLowerCase().startsWith(`${n}=`))?.slice(n.length + 1) ?? undefined;
    const path = attr('path') ?? (target.pathname.replace(/\/[^/]*$/, '') || '/');
    const maxAge = attr('max-age');
    const expiresAt = attr('expires');
    const expires =
      maxAge !== undefined
        ? Date.now() + Number(maxAge) * 1000
        : expiresAt !== undefined
          ? Date.parse(expiresAt)
          : Number.POSITIVE_INFINITY;
    this.cookies = this.cookies.filter((c) => !(c.name === name && c.path === path));
    this.cookies.push({ name, value, path, expires, attributes: attrs.join('; ') });
  }
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  return (
    requestPath === cookiePath ||
    (requestPath.startsWith(cookiePath) &&
      (cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/'))
  );
}

/** The value of a hidden or text input of an HTML page. */
export function inputValue(html: string, name: string): string | undefined {
  const input = new RegExp(`<input[^>]*name="${name}"[^>]*>`).exec(html)?.[0];
  return input ? /value="([^"]*)"/.exec(input)?.[1] : undefined;
}

/** The action of the form whose action ends with `suffix`. */
export function formAction(html: string, suffix: string): string | undefined {
  return [...html.matchAll(/<form[^>]*action="([^"]*)"/g)].map((m) => m[1]).find((a) => a.endsWith(suffix));
}
