import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
// The official OpenAPI 3.1 schema (spec.openapis.org/oas/3.1/schema), as the package ships it.
import openApi31Schema from '@seriousme/openapi-schema-validator/schemas/v3.1/schema.json';
import type { TestApp } from './helpers/app';
import { EslPeer } from './helpers/esl-peer';
import { BUILTIN, waitForJob } from './helpers/jobs';
import { cdrBody, clickToCallLeg, jsonCdr } from './helpers/json-cdr';
import { Browser } from './helpers/browser';
import { callback, JSON_ACCEPT, openLogin, PASSWORD, startDevApp, submitToCallback } from './helpers/login';
import { TestHomeserver } from './helpers/matrix-homeserver';
import { pngBytes } from './helpers/media';
import { writeStub } from './helpers/stub-process';
import { verifySignature, WebhookReceiver } from './helpers/webhook-receiver';

/**
 * Real requests against the whole service, every answer validated against the OpenAPI document
 * it serves (ajv, JSON Schema 2020-12): status, content type, body and the documented headers.
 * Every documented operation must have been answered with a success at least once, so a route
 * without a document, or a document without a route, fails here.
 */

type MediaType = { schema: object; 'x-events'?: Record<string, { schema: object }> };
type Operation = {
  operationId: string;
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { $ref?: string; content?: Record<string, MediaType> }>;
};
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, { content: Record<string, { schema: object }> }> };
};

let t: TestApp;
let hs: TestHomeserver;
let esl: EslPeer;
let receiver: WebhookReceiver;
let doc: Document;
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats(ajv);
const compiled = new Map<object, ValidateFunction>();
/** operationId -> statuses seen. */
const seen = new Map<string, Set<number>>();

function validator(schema: object): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) compiled.set(schema, (v = ajv.compile(schema)));
  return v;
}

/**
 * The document's operation for a concrete method and path (`/api/v1/models/<uuid>`); a path
 * without parameters first, as OpenAPI says (`/api/v1/jobs/events` is not `/api/v1/jobs/{id}`).
 */
function operationFor(method: string, url: string): Operation {
  const pathname = new URL(url, 'http://x').pathname;
  const exact = doc.paths[pathname]?.[method];
  if (exact) return exact;
  for (const [template, item] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`);
    if (pattern.test(pathname) && item[method]) return item[method];
  }
  throw new Error(`${method.toUpperCase()} ${pathname} is not in the OpenAPI document`);
}

function expectValid(schema: object, value: unknown, what: string): void {
  const validate = validator(schema);
  if (!validate(value))
    throw new Error(
      `${what} does not match the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`,
    );
}

interface Answer {
  status: number;
  contentType: string | undefined;
  body: unknown;
}

/** Checks one real answer against the document and records the operation as exercised. */
function check(method: string, url: string, answer: Answer, requestBody?: unknown): void {
  const op = operationFor(method, url);
  const what = `${method.toUpperCase()} ${url} -> ${answer.status}`;
  // A success must have come from a request the document describes (bad ones are sent on purpose).
  if (answer.status < 300 && requestBody !== undefined && op.requestBody?.content['application/json'])
    expectValid(op.requestBody.content['application/json'].schema, requestBody, `the request of ${what}`);
  const status = String(answer.status);
  let response = op.responses[status] ?? op.responses[`${status[0]}XX`];
  if (!response) throw new Error(`${what}: status not documented`);
  if (response.$ref) response = doc.components.responses[response.$ref.split('/').pop()!];
  if (response.content) {
    const type = answer.contentType?.split(';')[0];
    const media = response.content[type ?? ''] ?? response.content['*/*'];
    if (!media) throw new Error(`${what}: content type ${type} not documented`);
    if (type && /json$/.test(type)) expectValid(media.schema, answer.body, what);
  } else if (answer.body !== undefined && answer.body !== '' && !(answer.status === 302)) {
    throw new Error(`${what}: documented without a body, answered ${JSON.stringify(answer.body)}`);
  }
  const statuses = seen.get(op.operationId) ?? new Set<number>();
  statuses.add(answer.status);
  seen.set(op.operationId, statuses);
}

interface CallOptions {
  auth?: string;
  headers?: Record<string, string>;
  json?: unknown;
  base?: string;
}

/** A real request with fetch; its answer is checked against the document. */
async function call(
  method: string,
  url: string,
  opts: CallOptions = {},
): Promise<Answer & { headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.auth) headers.authorization = opts.auth;
  if (opts.json !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${opts.base ?? t.url}${url}`, {
    method: method.toUpperCase(),
    headers,
    body: opts.json === undefined ? undefined : JSON.stringify(opts.json),
    redirect: 'manual',
  });
  const text = await res.text();
  const contentType = res.headers.get('content-type') ?? undefined;
  const body = text && contentType?.includes('json') ? JSON.parse(text) : text || undefined;
  const answer = { status: res.status, contentType, body };
  check(method, url, answer, opts.json);
  return { ...answer, headers: res.headers };
}

async function expectStatus<T extends { status: number; body: unknown }>(p: Promise<T>, status: number) {
  const res = await p;
  if (res.status !== status)
    throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res;
}

interface ServerEvent {
  id: string;
  event: string;
  data: { job_id: string; status: string };
}

/**
 * Reads a server-sent event stream until it ends or `enough` holds; the answer is checked like
 * the others and each event's data against the schema the document gives its type.
 */
async function readEvents(
  url: string,
  auth: string,
  enough: (events: ServerEvent[]) => boolean = () => false,
): Promise<ServerEvent[]> {
  const abort = new AbortController();
  const res = await fetch(`${t.url}${url}`, { headers: { authorization: auth }, signal: abort.signal });
  check('get', url, {
    status: res.status,
    contentType: res.headers.get('content-type') ?? undefined,
    body: undefined,
  });
  expect(res.status).toBe(200);
  const types = operationFor('get', url).responses['200'].content!['text/event-stream']['x-events']!;
  const events: ServerEvent[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of res.body!) {
      buffered += decoder.decode(chunk, { stream: true });
      for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
        const frame = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const fields = Object.fromEntries(
          frame
            .split('\n')
            .filter((l) => l && !l.startsWith(':'))
            .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trimStart()]),
        );
        if (fields.event === undefined) continue; // `retry:`
        if (!types[fields.event]) throw new Error(`${url}: event type ${fields.event} not documented`);
        const data = JSON.parse(fields.data) as ServerEvent['data'];
        expectValid(types[fields.event].schema, data, `a ${fields.event} event of ${url}`);
        events.push({ id: fields.id, event: fields.event, data });
        if (enough(events)) return events;
      }
    }
  } finally {
    abort.abort();
  }
  return events;
}

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  hs = await TestHomeserver.start('registration-secret', 'chat.test');
  esl = await EslPeer.start('s3cret');
  const stubs = await mkdtemp(path.join(os.tmpdir(), 'openapi-stubs-'));
  t = await startDevApp({
    LOCAL_EXECUTOR_TRUST: 'any',
    TELEPHONY_NUMBERS: '15550001000-15550001099',
    TELEPHONY_EXTENSIONS: '1000-1099',
    TELEPHONY_SIP_DOMAIN: 'pbx.example.com',
    TELEPHONY_CDR_PASSWORD: 'cdr-secret',
    FREESWITCH_ESL_HOST: '127.0.0.1',
    FREESWITCH_ESL_PORT: String(esl.port),
    FREESWITCH_ESL_PASSWORD: 's3cret',
    FREESWITCH_GATEWAY: 'pstn',
    MATRIX_HOMESERVER_URL: hs.url,
    MATRIX_REGISTRATION_SHARED_SECRET: 'registration-secret',
    MATRIX_SERVER_NAME: 'chat.test',
    DENDRITE_BIN: (await writeStub(stubs, 'dendrite')).path,
    MATTERBRIDGE_BIN: (await writeStub(stubs, 'matterbridge')).path,
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOW_PRIVATE: `127.0.0.1:${receiver.port}`,
    // The last signed-up account (below) is an operator: the quota route is theirs.
    ADMIN_SUBJECTS: 'openapi-v2',
  });
  await esl.waitUntil(() => esl.logins >= 1);
  doc = (await (await fetch(`${t.url}/api/openapi.json`)).json()) as Document;
  await expectStatus(call('get', '/api/openapi.json'), 200);
});
afterAll(async () => {
  await t?.close();
  await hs?.stop();
  await esl?.stop();
  await receiver?.close();
});

describe('GET /api/openapi.json', () => {
  it('is an OpenAPI 3.1 document whose schemas all compile as JSON Schema 2020-12', () => {
    expect(doc.openapi).toBe('3.1.0');
    let schemas = 0;
    const visit = (node: unknown, key?: string) => {
      if (!node || typeof node !== 'object') return;
      if (key === 'schema') {
        validator(node as object);
        schemas++;
        return;
      }
      for (const [k, v] of Object.entries(node)) visit(v, k);
    };
    visit(doc.paths);
    expect(schemas).toBeGreaterThan(50);
  });

  it('is valid against the official OpenAPI 3.1 schema', () => {
    const official = new Ajv2020({ strict: false, allErrors: true });
    addFormats(official);
    // RFC 9110's media ranges (content map keys); any string the spec allows there passes.
    official.addFormat('media-range', true);
    const validate = official.compile(openApi31Schema);
    const valid = validate(doc);
    expect(valid ? [] : validate.errors!.map((e) => `${e.instancePath} ${e.message}`)).toEqual([]);
  });

  it('keeps the rules of the specification that its schema cannot express', () => {
    const problems: string[] = [];
    const operationIds = new Set<string>();
    const templates = new Map<string, string>();
    type Parameter = { name: string; in: string };
    type Server = { url: string; variables?: Record<string, unknown> };
    const checkServers = (servers: Server[] | undefined, where: string) => {
      for (const server of servers ?? [])
        for (const [, name] of server.url.matchAll(/\{(\w+)\}/g))
          if (!server.variables?.[name])
            problems.push(`${where}: server ${server.url} does not define ${name}`);
    };
    checkServers((doc as unknown as { servers: Server[] }).servers, 'document');
    for (const [template, item] of Object.entries(doc.paths)) {
      // Templated paths that differ only in their parameters' names are the same path.
      const shape = template.replace(/\{\w+\}/g, '{}');
      if (templates.has(shape)) problems.push(`${template} and ${templates.get(shape)} are the same path`);
      templates.set(shape, template);
      const names = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${template}`;
        const o = op as Operation & { parameters?: Parameter[]; servers?: Server[] };
        if (operationIds.has(o.operationId)) problems.push(`${where}: operationId ${o.operationId} repeated`);
        operationIds.add(o.operationId);
        const inPath = (o.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
        if (inPath.sort().join() !== [...names].sort().join())
          problems.push(`${where}: path parameters ${inPath.join()} are not the template's ${names.join()}`);
        const keys = (o.parameters ?? []).map(
          (p) => `${p.in} ${p.in === 'header' ? p.name.toLowerCase() : p.name}`,
        );
        if (new Set(keys).size !== keys.length) problems.push(`${where}: a parameter is listed twice`);
        for (const p of o.parameters ?? [])
          if (p.in === 'header' && /^(accept|content-type|authorization)$/i.test(p.name))
            problems.push(`${where}: header parameter ${p.name} is ignored by OpenAPI`);
        checkServers(o.servers, where);
      }
    }
    // Every reference resolves inside the document.
    const visit = (node: unknown, at: string) => {
      if (!node || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node)) {
        if (k === '$ref' && typeof v === 'string') {
          const target = v
            .replace(/^#\//, '')
            .split('/')
            .reduce<unknown>(
              (n, part) =>
                (n as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')],
              doc,
            );
          if (target === undefined) problems.push(`${at}: $ref ${v} does not resolve`);
        } else visit(v, `${at}/${k}`);
      }
    };
    visit(doc, '');
    expect(problems).toEqual([]);
  });

  it('names the security schemes: bearer and the API key header', () => {
    expect(
      (doc as unknown as { components: { securitySchemes: object } }).components.securitySchemes,
    ).toMatchObject({
      bearer: { type: 'http', scheme: 'bearer' },
      apiKey: { type: 'apiKey', in: 'header', name: 'x-service-key' },
    });
  });
});

describe('every documented operation, answered for real', () => {
  let auth: string;
  let refreshToken: string;
  let browser: Browser;

  it('the service index, health, readiness and the login flow', async () => {
    await expectStatus(call('get', '/'), 200);
    await expectStatus(call('get', '/healthz'), 200);
    await expectStatus(call('get', '/readyz'), 200);
    for (const version of ['v1', 'v2']) {
      await expectStatus(call('get', `/api/${version}/auth/login`, { headers: JSON_ACCEPT }), 200);
      // A browser's redirect through the identity provider's pages, to the callback.
      browser = new Browser();
      const { html, url } = await openLogin(t.url, browser, version);
      const signUp = new URL(/href="([^"]*view=sign-up)"/.exec(html)![1].replace(/&amp;/g, '&'), url);
      const page = await (await browser.get(signUp.toString())).text();
      const callbackUrl = await submitToCallback(
        browser,
        t.url,
        page,
        '/sign-up',
        { username: `openapi-${version}`, password: PASSWORD },
        version,
      );
      const { res, body } = await callback(browser, callbackUrl);
      check('get', new URL(callbackUrl).pathname, {
        status: res.status,
        contentType: res.headers.get('content-type') ?? undefined,
        body,
      });
      expect(res.status).toBe(200);
      auth = `Bearer ${body.access_token}`;
      refreshToken = body.refresh_token;
    }
    const session = await browser.request(`${t.url}/api/v1/auth/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-requested-with': 'fetch',
        accept: 'application/json',
      },
      body: '{}',
    });
    check('post', '/api/v1/auth/token', {
      status: session.status,
      contentType: session.headers.get('content-type') ?? undefined,
      body: await session.json(),
    });
    expect(session.status).toBe(200);
    const metadata = await browser.get(`${t.url}/api/v1/fetch-metadata`, JSON_ACCEPT);
    check('get', '/api/v1/fetch-metadata', {
      status: metadata.status,
      contentType: metadata.headers.get('content-type') ?? undefined,
      body: await metadata.json(),
    });
    expect(metadata.status).toBe(200);
    const refreshed = await expectStatus(
      call('post', '/api/v1/auth/refresh', { json: { refresh_token: refreshToken } }),
      200,
    );
    auth = `Bearer ${(refreshed.body as { access_token: string }).access_token}`;
    await expectStatus(call('post', '/api/v1/auth/refresh', { json: { refresh_token: 'nonsense' } }), 401);
  });

  it('tokens and teams', async () => {
    const team = await expectStatus(call('post', '/api/v1/teams', { auth, json: { name: 'Acme' } }), 201);
    const teamId = (team.body as { id: string }).id;
    await expectStatus(call('get', '/api/v1/teams?limit=1', { auth }), 200);
    const key = await expectStatus(
      call('post', '/api/v1/tokens', { auth, json: { name: 'ci', team_id: teamId } }),
      201,
    );
    await expectStatus(call('post', '/api/v1/tokens', { auth, json: { name: 'personal' } }), 201);
    await expectStatus(call('get', '/api/v1/tokens', { auth }), 200);
    await expectStatus(call('get', `/api/v1/tokens?team_id=${teamId}`, { auth }), 200);
    await expectStatus(call('delete', `/api/v1/tokens/${(key.body as { id: string }).id}`, { auth }), 204);
    await expectStatus(call('post', '/api/v1/tokens', { auth, json: { team_id: 'x' } }), 400);
    await expectStatus(call('get', '/api/v1/teams'), 401);
  });

  it('team members, invitations and the audit log', async () => {
    const team = await expectStatus(call('post', '/api/v1/teams', { auth, json: { name: 'Crew' } }), 201);
    const teamId = (team.body as { id: string }).id;
    // Two more people, signed in to the web app (its session tokens: the services open them here).
    const signedIn = async (sub: string) => {
      const user = await t.runtime.services.users.upsertFromClaims({ sub, preferred_username: sub });
      const cookie = await t.runtime.services.sessions.open(user, null);
      return `Bearer ${(await t.runtime.services.login.sessionToken({ cookie })).accessToken}`;
    };
    const guest = await signedIn('oa-guest');
    const declined = await signedIn('oa-decliner');
    await expectStatus(call('get', `/api/v1/teams/${teamId}`, { auth }), 200);
    const invite = await expectStatus(
      call('post', `/api/v1/teams/${teamId}/invites`, {
        auth,
        json: { username: 'oa-guest', role: 'viewer' },
      }),
      201,
    );
    await expectStatus(call('get', `/api/v1/teams/${teamId}/invites`, { auth }), 200);
    await expectStatus(call('get', '/api/v1/invites', { auth: guest }), 200);
    await expectStatus(
      call('post', '/api/v1/invites/accept', {
        auth: guest,
        json: { token: (invite.body as { token: string }).token },
      }),
      200,
    );
    const other = await expectStatus(
      call('post', `/api/v1/teams/${teamId}/invites`, { auth, json: { username: 'oa-decliner' } }),
      201,
    );
    await expectStatus(
      call('post', '/api/v1/invites/decline', {
        auth: declined,
        json: { invite_id: (other.body as { id: string }).id },
      }),
      200,
    );
    const revoked = await expectStatus(
      call('post', `/api/v1/teams/${teamId}/invites`, { auth, json: { email: 'later@x.test' } }),
      201,
    );
    await expectStatus(
      call('delete', `/api/v1/teams/${teamId}/invites/${(revoked.body as { id: string }).id}`, { auth }),
      204,
    );
    const members = await expectStatus(call('get', `/api/v1/teams/${teamId}/members`, { auth }), 200);
    const guestId = (members.body as { user_id: string; username: string }[]).find(
      (m) => m.username === 'oa-guest',
    )!.user_id;
    await expectStatus(
      call('put', `/api/v1/teams/${teamId}/members/${guestId}`, { auth, json: { role: 'member' } }),
      200,
    );
    await expectStatus(
      call('put', `/api/v1/teams/${teamId}/members/${guestId}`, { auth: guest, json: { role: 'owner' } }),
      403,
    );
    await expectStatus(
      call('get', `/api/v1/teams/${teamId}/audit?limit=2&action=member.invited`, { auth }),
      200,
    );
    await expectStatus(call('delete', `/api/v1/teams/${teamId}/members/${guestId}`, { auth }), 204);
    await expectStatus(call('delete', `/api/v1/teams/${teamId}`, { auth }), 204);
    await expectStatus(call('get', `/api/v1/teams/${teamId}`, { auth }), 404);
  });

  it('media, models, deployments and jobs', async () => {
    const form = new FormData();
    form.append('tags', 'cats,pets');
    form.append('file', new Blob([pngBytes(16, 16)], { type: 'image/png' }), 'cat.png');
    const uploaded = await fetch(`${t.url}/uploads/upload`, {
      method: 'POST',
      headers: { authorization: auth },
      body: form,
    });
    const upload = {
      status: uploaded.status,
      contentType: uploaded.headers.get('content-type') ?? undefined,
      body: await uploaded.json(),
    };
    check('post', '/uploads/upload', upload);
    expect(upload.status).toBe(200);
    const mediaId = (upload.body as { media: { id: string } }).media.id;
    const refused = await fetch(`${t.url}/uploads/upload`, {
      method: 'POST',
      headers: { authorization: auth },
      body: 'x',
    });
    check('post', '/uploads/upload', {
      status: refused.status,
      contentType: refused.headers.get('content-type') ?? undefined,
      body: await refused.json(),
    });

    const list = await expectStatus(call('get', '/api/v1/media?tags=cats', { auth }), 200);
    const fileUrl = new URL((list.body as { media: { media_key: string }[] }).media[0].media_key);
    const file = await fetch(fileUrl);
    check('get', fileUrl.pathname, {
      status: file.status,
      contentType: file.headers.get('content-type') ?? undefined,
      body: undefined,
    });
    expect(file.status).toBe(200);
    await expectStatus(call('put', `/api/v1/media/${mediaId}`, { auth, json: { tags: ['cats'] } }), 200);
    await expectStatus(call('put', `/api/v1/media/${mediaId}`, { auth, json: { tags: 'cats' } }), 400);

    const modelId = randomUUID();
    await expectStatus(
      call('post', '/api/v1/models', {
        auth,
        json: {
          id: modelId,
          name: 'echo',
          version: '1',
          container: 'docker.io/library/alpine:3',
          command: 'echo {args}',
          tags: ['demo'],
          args: { text: { type: 'string', format: ':value', description: 'what to say', optional: true } },
        },
      }),
      201,
    );
    await expectStatus(call('get', '/api/v1/models?tags=demo&limit=5', { auth }), 200);
    await expectStatus(call('get', `/api/v1/models/${modelId}`, { auth }), 200);
    await expectStatus(call('get', `/api/v1/models/${randomUUID()}`, { auth }), 404);
    await expectStatus(
      call('put', `/api/v1/models/${modelId}`, { auth, json: { description: 'says it' } }),
      200,
    );
    for (const action of ['like', 'unlike', 'follow', 'unfollow'])
      await expectStatus(call('patch', `/api/v1/models/${modelId}/${action}`, { auth }), 200);
    await expectStatus(
      call('put', `/api/v1/models/${modelId}`, {
        auth,
        json: { command: 'echo -n {args}', secrets: ['HF_TOKEN'] },
      }),
      200,
    );
    const versions = await expectStatus(
      call('get', `/api/v1/models/${modelId}/versions?limit=1`, { auth }),
      200,
    );
    const [latest] = versions.body as { id: string }[];
    await expectStatus(call('get', `/api/v1/models/${modelId}/versions/${latest.id}`, { auth }), 200);
    await expectStatus(call('get', `/api/v1/models/${modelId}/versions/${randomUUID()}`, { auth }), 404);
    await expectStatus(call('put', '/api/v1/secrets/HF_TOKEN', { auth, json: { value: 'hf_openapi' } }), 200);
    await expectStatus(call('put', '/api/v1/secrets/HF_TOKEN', { auth, json: { value: 7 } }), 400);
    await expectStatus(call('get', '/api/v1/secrets', { auth }), 200);
    await expectStatus(call('delete', '/api/v1/secrets/HF_TOKEN', { auth }), 204);
    await expectStatus(call('delete', '/api/v1/secrets/HF_TOKEN', { auth }), 404);

    const created = await expectStatus(
      call('post', '/api/v1/deployments', {
        auth,
        headers: { accept: 'application/service.rest.v1+json' },
        json: { name: 'count', model_id: BUILTIN.wordcount, args: { text: mediaId } },
      }),
      201,
    );
    const deploymentId = (created.body as { id: string }).id;
    await expectStatus(call('get', '/api/v1/deployments', { auth }), 200);
    await expectStatus(call('get', `/api/v1/deployments/${deploymentId}`, { auth }), 200);
    const jobs = await expectStatus(call('get', '/api/v1/jobs?status=queued', { auth }), 200);
    void jobs;
    const all = await expectStatus(call('get', '/api/v1/jobs', { auth }), 200);
    const jobId = (all.body as { id: string }[])[0].id;
    await waitForJob(t, auth, jobId);
    await expectStatus(call('get', `/api/v1/jobs/${jobId}`, { auth }), 200);
    await expectStatus(call('post', `/api/v1/jobs/${jobId}/cancel`, { auth }), 200);
    await expectStatus(call('get', '/api/v1/jobs?status=nonsense', { auth }), 400);
    await expectStatus(call('get', '/api/v1/billing/usage', { auth }), 200);
    await expectStatus(call('get', '/api/v1/billing/usage?from=2026-01-01', { auth }), 400);
    await expectStatus(call('get', '/api/v1/billing/budget', { auth }), 200);
    await expectStatus(
      call('put', '/api/v1/billing/budget', { auth, json: { monthly_limit: 'x', action: 'block' } }),
      400,
    );
    await expectStatus(
      call('put', '/api/v1/billing/budget', { auth, json: { monthly_limit: '0.01', action: 'block' } }),
      200,
    );
    await expectStatus(
      call('post', '/api/v1/deployments', {
        auth,
        json: { name: 'count', model_id: BUILTIN.wordcount, args: { text: mediaId } },
      }),
      402,
    );
    await expectStatus(
      call('put', '/api/v1/billing/budget', { auth, json: { monthly_limit: '1000000', action: 'notify' } }),
      200,
    );

    const batch = await expectStatus(
      call('post', '/api/v1/batches', {
        auth,
        json: { name: 'counts', model_id: BUILTIN.wordcount, inputs: { arg: 'text', tags: ['cats'] } },
      }),
      201,
    );
    const batchId = (batch.body as { id: string }).id;
    await expectStatus(call('get', '/api/v1/batches', { auth }), 200);
    await expectStatus(call('get', `/api/v1/batches/${batchId}`, { auth }), 200);
    await expectStatus(call('get', `/api/v1/batches/${batchId}/jobs?status=queued`, { auth }), 200);
    await expectStatus(call('post', `/api/v1/batches/${batchId}/cancel`, { auth }), 200);
    // Canceled: its stream sends the batch once, as its last event, and ends.
    const batchEvents = await readEvents(`/api/v1/batches/${batchId}/events`, auth);
    expect(batchEvents).toHaveLength(1);
    expect(batchEvents[0]).toMatchObject({ event: 'completed', data: { id: batchId, status: 'canceled' } });
    const zip = await expectStatus(call('get', `/api/v1/batches/${batchId}/results`, { auth }), 200);
    expect(zip.contentType).toBe('application/zip');
    await expectStatus(call('post', `/api/v1/batches/${batchId}/retry`, { auth }), 200);
    await expectStatus(call('get', `/api/v1/batches/${randomUUID()}`, { auth }), 404);
    await expectStatus(
      call('post', '/api/v1/batches', {
        auth,
        json: { name: 'none', model_id: BUILTIN.wordcount, inputs: { arg: 'text', media_ids: [] } },
      }),
      400,
    );
    const quota = await expectStatus(call('get', '/api/v1/billing/quota', { auth }), 200);
    const owner = (quota.body as { owner: { type: string; id: string } }).owner;
    await expectStatus(
      call('put', `/api/v1/admin/quotas/${owner.type}/${owner.id}`, {
        auth,
        json: { max_running_jobs: 5, machines: { cpu: 2 }, shares: 1 },
      }),
      200,
    );
    await expectStatus(
      call('put', `/api/v1/admin/quotas/${owner.type}/${owner.id}`, { auth, json: { shares: -1 } }),
      400,
    );
    // Back to the defaults, for the rest of the suite's jobs.
    await expectStatus(
      call('put', `/api/v1/admin/quotas/${owner.type}/${owner.id}`, { auth, json: {} }),
      200,
    );

    await expectStatus(call('delete', `/api/v1/models/${modelId}`, { auth }), 204);
    await expectStatus(call('delete', `/api/v1/media/${mediaId}`, { auth }), 204);
  });

  it('Idempotency-Key, synchronous runs, deadlines, webhooks, retries and event streams', async () => {
    // An upload and an API key sent twice with one key: the second answer is the first, replayed.
    const upload = async () => {
      const form = new FormData();
      form.append('file', new Blob([pngBytes(8, 8)], { type: 'image/png' }), 'dog.png');
      const res = await fetch(`${t.url}/uploads/upload`, {
        method: 'POST',
        headers: { authorization: auth, 'idempotency-key': 'openapi-upload' },
        body: form,
      });
      const answer = {
        status: res.status,
        contentType: res.headers.get('content-type') ?? undefined,
        body: await res.json(),
      };
      check('post', '/uploads/upload', answer);
      expect(answer.status).toBe(200);
      return { ...answer, replayed: res.headers.get('idempotent-replayed') };
    };
    const uploaded = await upload();
    const uploadedAgain = await upload();
    expect([uploaded.replayed, uploadedAgain.replayed]).toEqual([null, 'true']);
    expect(uploadedAgain.body).toEqual(uploaded.body);
    const mediaId = (uploaded.body as { media: { id: string } }).media.id;
    const createKey = () =>
      expectStatus(
        call('post', '/api/v1/tokens', {
          auth,
          headers: { 'idempotency-key': 'openapi-token' },
          json: { name: 'once' },
        }),
        201,
      );
    const key = await createKey();
    const keyAgain = await createKey();
    expect(keyAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(keyAgain.body).toEqual(key.body);

    // A synchronous run with a deadline, told to a webhook of every event, sent twice with one key.
    const secret = await expectStatus(call('get', '/api/v1/webhooks/default/secret', { auth }), 200);
    const run = () =>
      expectStatus(
        call('post', '/api/v1/deployments', {
          auth,
          headers: { prefer: 'wait=60', 'cancel-after': '10m', 'idempotency-key': 'openapi-run' },
          json: {
            name: 'hooked',
            model_id: BUILTIN.wordcount,
            args: { text: mediaId },
            webhook: receiver.url('/openapi'),
            webhook_events_filter: ['start', 'output', 'logs', 'completed'],
          },
        }),
        201,
      );
    const ran = await run();
    expect(ran.headers.get('preference-applied')).toBe('wait=60');
    const job = (ran.body as { job: { id: string; deadline_at: string | null } }).job;
    expect(job.deadline_at).not.toBeNull();
    const ranAgain = await run();
    expect(ranAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(ranAgain.body).toEqual(ran.body);
    await waitForJob(t, auth, job.id);

    // Each message is the job as GET /api/v1/jobs/{id} shows it, signed with the owner's secret.
    const messages = await receiver.until((r) =>
      r.some((m) => m.path === '/openapi' && JSON.parse(m.body).status === 'succeeded'),
    );
    const jobSchema = operationFor('get', `/api/v1/jobs/${job.id}`).responses['200'].content![
      'application/json'
    ];
    for (const m of messages.filter((m) => m.path === '/openapi')) {
      expectValid(jobSchema.schema, JSON.parse(m.body), 'a webhook message');
      expect(verifySignature((secret.body as { key: string }).key, m)).toBe(true);
    }
    // Recorded once the receiver's answer is in.
    for (;;) {
      const listed = await expectStatus(
        call('get', `/api/v1/jobs/${job.id}/webhook-deliveries?limit=10`, { auth }),
        200,
      );
      const deliveries = listed.body as { event: string; status: string }[];
      if (deliveries.some((d) => d.event === 'completed' && d.status === 'delivered')) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await expectStatus(call('get', `/api/v1/jobs/${randomUUID()}/webhook-deliveries`, { auth }), 404);
    const rotated = await expectStatus(call('post', '/api/v1/webhooks/default/secret/rotate', { auth }), 200);
    expect(rotated.body).not.toEqual(secret.body);

    const retry = await expectStatus(
      call('post', `/api/v1/jobs/${job.id}/retry`, { auth, headers: { 'cancel-after': '5m' } }),
      201,
    );
    expect(retry.body).toMatchObject({ retry_of: job.id, attempt: 1 });
    // It runs again and keeps its output under an id of its own (the first kept the target's).
    expect(await waitForJob(t, auth, (retry.body as { id: string }).id)).toMatchObject({
      status: 'SUCCEEDED',
    });
    await expectStatus(
      call('post', `/api/v1/jobs/${job.id}/retry`, { auth, headers: { 'cancel-after': 'soon' } }),
      400,
    );

    // One job's stream: its whole history, ending with its end; resumed after that, nothing (204).
    const history = await readEvents(`/api/v1/jobs/${job.id}/events`, auth);
    expect(history[0]).toMatchObject({ event: 'transition', data: { status: 'queued' } });
    expect(history.at(-1)).toMatchObject({ event: 'transition', data: { status: 'succeeded' } });
    await expectStatus(
      call('get', `/api/v1/jobs/${job.id}/events`, {
        auth,
        headers: { 'last-event-id': history.at(-1)!.id },
      }),
      204,
    );
    // All jobs' stream, from the start: the retry's end comes too.
    const all = await readEvents('/api/v1/jobs/events?last_event_id=0', auth, (events) =>
      events.some(
        (e) => e.data.job_id === (retry.body as { id: string }).id && e.data.status === 'succeeded',
      ),
    );
    expect(all.some((e) => e.data.job_id === job.id)).toBe(true);
  }, 120_000);

  it('telephony', async () => {
    const assigned = await expectStatus(call('get', '/api/v2/assign-number', { auth }), 200);
    const { extension, phone_number: number } = assigned.body as { extension: string; phone_number: string };
    const link = await expectStatus(
      call('get', `/api/v2/call-link?source_number=${extension}&destination_number=4930123456`, { auth }),
      200,
    );
    const uuid = (link.body as { call_uuid: string }).call_uuid;
    const leg = clickToCallLeg({
      uuid,
      extension,
      number,
      destination: '4930123456',
      start: 1795300000,
      billsec: 12,
    });
    const { type, body } = cdrBody(jsonCdr(leg), 'false');
    const basic = `Basic ${Buffer.from('freeswitch:cdr-secret').toString('base64')}`;
    const post = () =>
      fetch(`${t.url}/api/v2/cdr?uuid=${uuid}`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': type },
        body,
      });
    for (const expected of [201, 200]) {
      const res = await post();
      check('post', '/api/v2/cdr', {
        status: res.status,
        contentType: res.headers.get('content-type') ?? undefined,
        body: await res.json(),
      });
      expect(res.status).toBe(expected);
    }
    await expectStatus(call('get', '/api/v2/call-recording', { auth }), 200);
    await expectStatus(call('get', '/api/v2/call-link?source_number=1&destination_number=x', { auth }), 400);
  });

  it('the chat bridge', async () => {
    const base = t.bridgeUrl!;
    const credentials = { username: 'openapi', password: 'Correct-horse-9' };
    await expectStatus(call('post', '/api/v1/matrix/user', { base, json: credentials }), 201);
    const login = await expectStatus(
      call('post', '/api/v1/matrix/user/login', { base, json: credentials }),
      200,
    );
    const headers = { 'x-api-key': (login.body as { api_key: string }).api_key };
    await expectStatus(
      call('post', '/api/v1/matrix/dendrite', {
        base,
        headers,
        json: { hostname: 'openapi.chat.test', port: '18450' },
      }),
      201,
    );
    const dendrites = await expectStatus(call('get', '/api/v1/matrix/dendrite', { base, headers }), 200);
    await expectStatus(
      call('post', '/api/v1/matrix/matterbridge', {
        base,
        headers,
        json: {
          name: 'general',
          conf: { platform: 'discord', token: 'bot-token', channel: 'general', server: 'Guild' },
        },
      }),
      201,
    );
    const bridges = await expectStatus(call('get', '/api/v1/matrix/matterbridge', { base, headers }), 200);
    await expectStatus(
      call('delete', `/api/v1/matrix/matterbridge/${(bridges.body as { id: string }[])[0].id}`, {
        base,
        headers,
      }),
      204,
    );
    await expectStatus(
      call('delete', `/api/v1/matrix/dendrite/${(dendrites.body as { id: string }[])[0].id}`, {
        base,
        headers,
      }),
      204,
    );
    await expectStatus(call('get', '/api/v1/matrix/dendrite', { base }), 401);
  });

  it('logs out', async () => {
    await expectStatus(call('post', '/api/v1/auth/logout', { json: { refresh_token: refreshToken } }), 204);
  });

  it('has answered every documented operation with a success', () => {
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).map((op) => op.operationId),
    );
    const unanswered = operations.filter((id) => ![...(seen.get(id) ?? [])].some((s) => s < 300));
    expect(unanswered).toEqual([]);
  });
});
