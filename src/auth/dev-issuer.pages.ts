/** Server-rendered pages of the development identity provider: no scripts, no external assets. */

export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/** Values are escaped where they are interpolated; `raw` marks already-safe markup. */
class Html {
  constructor(readonly value: string) {}
}
const raw = (value: string) => new Html(value);

function html(strings: TemplateStringsArray, ...values: (string | Html | (string | Html)[])[]): Html {
  const part = (v: string | Html): string => (v instanceof Html ? v.value : escapeHtml(v));
  return raw(
    strings.reduce(
      (out, s, i) => out + s + (i < values.length ? [values[i]].flat().map(part).join('') : ''),
      '',
    ),
  );
}

export const PAGE_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

const STYLE = `
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f4f4f5; color: #18181b; }
  .banner { background: #b45309; color: #fff; padding: .75rem 1rem; text-align: center; }
  main { max-width: 26rem; margin: 2rem auto; background: #fff; padding: 1.5rem 2rem; border-radius: .5rem;
         box-shadow: 0 1px 3px rgba(0,0,0,.15); }
  label { display: block; margin-top: .75rem; font-weight: 600; }
  input { width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #a1a1aa; border-radius: .25rem; }
  button { margin-top: 1.25rem; padding: .5rem 1rem; font: inherit; border: 0; border-radius: .25rem;
           background: #1d4ed8; color: #fff; cursor: pointer; }
  button.secondary { background: #e4e4e7; color: #18181b; }
  .error { background: #fee2e2; color: #991b1b; padding: .5rem .75rem; border-radius: .25rem; }
  .hint { color: #52525b; font-size: .875rem; }
`;

function layout(title: string, body: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>${title}</title>
        <style>
          ${raw(STYLE)}
        </style>
      </head>
      <body>
        <div class="banner" role="note">
          <strong>Development identity provider: not for production.</strong> Accounts exist only in this
          service's database. Set <code>OIDC_ISSUER</code> to use a real identity provider.
        </div>
        <main>${body}</main>
      </body>
    </html> `.value;
}

export interface FormPage {
  /** Where the forms post: `{issuer path}/interaction/{uid}`. */
  action: string;
  csrf: string;
  error?: string;
  values?: Record<string, string | undefined>;
}

const errorBox = (error?: string) => (error ? html`<p class="error" role="alert">${error}</p>` : raw(''));

const field = (label: string, name: string, type: string, attrs: string, value = '') =>
  html`<label for="${name}">${label}</label>
    <input id="${name}" name="${name}" type="${type}" value="${value}" ${raw(attrs)} />`;

const cancelForm = (page: FormPage) =>
  html`<form method="post" action="${page.action}/cancel">
    <input type="hidden" name="csrf" value="${page.csrf}" />
    <button class="secondary" type="submit">Cancel</button>
  </form>`;

export function signInPage(page: FormPage): string {
  const v = page.values ?? {};
  return layout(
    'Sign in',
    html`<h1>Sign in</h1>
      ${errorBox(page.error)}
      <form method="post" action="${page.action}/sign-in">
        <input type="hidden" name="csrf" value="${page.csrf}" />
        ${field('Username', 'username', 'text', 'required autocomplete="username" autofocus', v.username)}
        ${field('Password', 'password', 'password', 'required autocomplete="current-password"')}
        <button type="submit">Sign in</button>
      </form>
      <p>No account yet? <a href="${page.action}?view=sign-up">Create one</a>.</p>
      ${cancelForm(page)}`,
  );
}

export function signUpPage(page: FormPage): string {
  const v = page.values ?? {};
  return layout(
    'Create an account',
    html`<h1>Create an account</h1>
      ${errorBox(page.error)}
      <form method="post" action="${page.action}/sign-up">
        <input type="hidden" name="csrf" value="${page.csrf}" />
        ${field('Username', 'username', 'text', 'required autocomplete="username" maxlength="64" autofocus', v.username)}
        <p class="hint">Letters, digits and . _ @ -; it is also your user id.</p>
        ${field('Password', 'password', 'password', 'required autocomplete="new-password" minlength="8"')}
        ${field('Email (optional)', 'email', 'email', 'autocomplete="email"', v.email)}
        ${field('Name (optional)', 'name', 'text', 'autocomplete="name" maxlength="200"', v.name)}
        <button type="submit">Create account and sign in</button>
      </form>
      <p>Already registered? <a href="${page.action}">Sign in</a>.</p>
      ${cancelForm(page)}`,
  );
}

export function messagePage(title: string, message: string): string {
  return layout(
    title,
    html`<h1>${title}</h1>
      <p>${message}</p>`,
  );
}
