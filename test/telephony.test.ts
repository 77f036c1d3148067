import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from './helpers/app';
import { cdrBody, clickToCallLeg, jsonCdr, type Leg } from './helpers/json-cdr';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    TELEPHONY_NUMBERS: '15550001000-15550001099,15550002005',
    TELEPHONY_EXTENSIONS: '1000-1199',
    TELEPHONY_SIP_DOMAIN: 'pbx.example.com',
    TELEPHONY_CDR_USERNAME: 'freeswitch',
    TELEPHONY_CDR_PASSWORD: 'cdr-secret',
    TELEPHONY_RECORDINGS_URL: 'https://recordings.example.com/fs',
    TELEPHONY_PROVIDER_ID: '7',
  });
});
afterAll(() => t.close());

const bearer = async (app: TestApp, sub: string) => `Bearer ${await app.tokenFor(sub)}`;
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const CDR_AUTH = basic('freeswitch', 'cdr-secret');

const assign = (app: TestApp, auth: string) =>
  app.http().get('/api/v2/assign-number').set('authorization', auth);

function postCdr(
  app: TestApp,
  leg: Leg | Record<string, unknown>,
  { encode = 'false', auth = CDR_AUTH }: { encode?: 'false' | 'true' | 'base64'; auth?: string } = {},
) {
  const cdr = 'direction' in leg && 'start' in leg ? jsonCdr(leg as Leg) : leg;
  const { type, body } = cdrBody(cdr, encode);
  return app
    .http()
    .post(`/api/v2/cdr?uuid=${(cdr.variables as { uuid?: string } | undefined)?.uuid ?? ''}`)
    .set('authorization', auth)
    .set('content-type', type)
    .set('user-agent', 'freeswitch-json/1.0')
    .send(body);
}

describe('GET /api/v2/assign-number', () => {
  it('assigns the lowest free number and extension, the same ones on every call', async () => {
    const auth = await bearer(t, 'alice');
    const first = await assign(t, auth);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      role: 'user',
      phone_number: '15550001000',
      idp_id: 'alice',
      extension: '1000',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/),
      updated_at: expect.stringMatching(/\+00:00$/),
    });
    const again = await assign(t, auth);
    expect(again.body).toEqual(first.body);
    const gql = await t.gql('mutation { assignNumber { role phoneNumber idpId extension } }', {}, auth);
    expect(gql.body.data.assignNumber).toEqual({
      role: 'user',
      phoneNumber: '15550001000',
      idpId: 'alice',
      extension: '1000',
    });
  });

  it('gives 50 users asking at once 50 distinct numbers and extensions, and keeps them', async () => {
    const auths = await Promise.all(Array.from({ length: 50 }, (_, i) => bearer(t, `crowd-${i}`)));
    const answers = await Promise.all(auths.map((a) => assign(t, a)));
    expect(answers.map((r) => r.status)).toEqual(auths.map(() => 200));
    const numbers = answers.map((r) => r.body.phone_number as string);
    const extensions = answers.map((r) => r.body.extension as string);
    expect(new Set(numbers).size).toBe(50);
    expect(new Set(extensions).size).toBe(50);
    for (const n of numbers) expect(Number(n) >= 15550001001 && Number(n) <= 15550001099).toBe(true);
    for (const e of extensions) expect(Number(e) >= 1001 && Number(e) <= 1199).toBe(true);

    const repeated = await Promise.all(auths.map((a) => assign(t, a)));
    expect(repeated.map((r) => r.body.phone_number)).toEqual(numbers);
    expect(repeated.map((r) => r.body.extension)).toEqual(extensions);
  });

  it('gives one user asking several times at once a single assignment', async () => {
    const auth = await bearer(t, 'eager');
    const answers = await Promise.all(Array.from({ length: 8 }, () => assign(t, auth)));
    expect(new Set(answers.map((r) => `${r.status} ${r.body.phone_number} ${r.body.extension}`)).size).toBe(
      1,
    );
    expect(answers[0].status).toBe(200);
  });

  it('refuses a team token (numbers are personal) and a request without credentials', async () => {
    const auth = await bearer(t, 'teamster');
    const team = await t.http().post('/api/v1/teams').set('authorization', auth).send({ name: 'acme' });
    const key = await t
      .http()
      .post('/api/v1/tokens')
      .set('authorization', auth)
      .send({ name: 'acme', team_id: team.body.id });
    const asTeam = await t.http().get('/api/v2/assign-number').set('x-service-key', key.body.token);
    expect(asTeam.status).toBe(403);
    expect(asTeam.body.error.code).toBe('FORBIDDEN');
    const records = await t.http().get('/api/v2/call-recording').set('x-service-key', key.body.token);
    expect(records.status).toBe(403);
    expect((await t.http().get('/api/v2/assign-number')).status).toBe(401);
  });

  it('answers 503 for click-to-call when no FreeSWITCH is configured', async () => {
    const auth = await bearer(t, 'alice');
    const res = await t
      .http()
      .get('/api/v2/call-link?source_number=1000&destination_number=4930123456')
      .set('authorization', auth);
    expect(res.status).toBe(503);
    expect(res.body.error).toEqual({
      code: 'UNAVAILABLE',
      message: expect.stringMatching(/FREESWITCH_ESL_HOST/),
    });
  });
});

describe('pools', () => {
  async function withApp(env: Record<string, string>, run: (app: TestApp) => Promise<void>) {
    const app = await startTestApp(env, { issuer: t.issuer });
    try {
      await run(app);
    } finally {
      await app.close();
    }
  }

  it('answers 409 once the phone number pool is exhausted, and keeps existing assignments', () =>
    withApp(
      { TELEPHONY_NUMBERS: '15550009000-15550009001', TELEPHONY_EXTENSIONS: '2000-2009' },
      async (app) => {
        const auths = await Promise.all(['p1', 'p2', 'p3', 'p4'].map((s) => bearer(app, s)));
        const answers = await Promise.all(auths.map((a) => assign(app, a)));
        expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 409, 409]);
        const refused = answers.find((r) => r.status === 409)!;
        expect(refused.body).toEqual({
          error: { code: 'CONFLICT', message: 'the phone number pool is exhausted' },
        });
        const holders = answers
          .filter((r) => r.status === 200)
          .map((r) => r.body.phone_number)
          .sort();
        expect(holders).toEqual(['15550009000', '15550009001']);
        const holder = auths[answers.findIndex((r) => r.status === 200)];
        expect((await assign(app, holder)).status).toBe(200);
      },
    ));

  it('answers 409 once the extension pool is exhausted', () =>
    withApp({ TELEPHONY_NUMBERS: '15550009000-15550009009', TELEPHONY_EXTENSIONS: '2000' }, async (app) => {
      expect((await assign(app, await bearer(app, 'e1'))).body.extension).toBe('2000');
      const second = await assign(app, await bearer(app, 'e2'));
      expect(second.status).toBe(409);
      expect(second.body.error.message).toBe('the extension pool is exhausted');
    }));

  it('answers 503 without a number pool, and refuses every CDR without a CDR password', () =>
    withApp({}, async (app) => {
      const res = await assign(app, await bearer(app, 'nobody'));
      expect(res.status).toBe(503);
      expect(res.body.error.message).toMatch(/TELEPHONY_NUMBERS/);
      const cdr = await postCdr(
        app,
        { direction: 'inbound', callerIdNumber: '1', destinationNumber: '2', start: 1795349703 },
        { auth: basic('freeswitch', '') },
      );
      expect(cdr.status).toBe(401);
      expect(cdr.body.error.message).toMatch(/TELEPHONY_CDR_PASSWORD/);
    }));
});

describe('POST /api/v2/cdr', () => {
  const leg = (over: Partial<Leg> = {}): Leg => ({
    uuid: randomUUID(),
    direction: 'inbound',
    callerIdNumber: '4930111222',
    destinationNumber: '15550001050',
    start: 1795349703,
    ...over,
  });

  it.each(['false', 'true', 'base64'] as const)(
    'stores the encode=%s variant once; a retry answers 200 with the same record',
    async (encode) => {
      const call = leg();
      const first = await postCdr(t, call, { encode });
      expect(first.status).toBe(201);
      expect(first.body).toEqual({ id: expect.any(Number), call_uuid: call.uuid, duplicate: false });
      const retry = await postCdr(t, call, { encode });
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual({ id: first.body.id, call_uuid: call.uuid, duplicate: true });
    },
  );

  it('maps the same call identically from every encoding', async () => {
    const auth = await bearer(t, 'mapper');
    const { phone_number: number } = (await assign(t, auth)).body;
    // Values with quotes, a backslash, braces, a percent sign and line breaks (the SDP variables).
    const variables = {
      sip_full_to: `"Support \\ Sales" <sip:${number}@pbx.example.com>;tag=as6b2`,
      sip_user_agent: 'Yealink SIP-T46S 66.86.0.15 {lab} 100%',
      domain_name: 'pbx.example.com',
    };
    const uuids: string[] = [];
    for (const encode of ['false', 'true', 'base64'] as const) {
      const call = leg({ destinationNumber: number, variables });
      uuids.push(call.uuid!);
      expect((await postCdr(t, call, { encode })).status).toBe(201);
    }
    const res = await t.http().get('/api/v2/call-recording').set('authorization', auth);
    const mine = res.body.filter((r: { call_uuid: string }) => uuids.includes(r.call_uuid));
    expect(mine).toHaveLength(3);
    const strip = ({ id: _id, call_uuid: _uuid, ...rest }: Record<string, unknown>) => rest;
    expect(strip(mine[1])).toEqual(strip(mine[0]));
    expect(strip(mine[2])).toEqual(strip(mine[0]));
  });

  it('refuses wrong or missing credentials with 401 and stores nothing', async () => {
    const call = leg();
    for (const auth of [
      basic('freeswitch', 'wrong'),
      basic('someone', 'cdr-secret'),
      basic('freeswitch', 'cdr-secret-but-longer'),
      `Bearer ${await t.tokenFor('alice')}`,
      'Basic !!!',
    ]) {
      const res = await postCdr(t, call, { auth });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Basic/);
      expect(res.body).toEqual({
        error: { code: 'UNAUTHENTICATED', message: 'wrong or missing CDR credentials' },
      });
    }
    const none = await t.http().post('/api/v2/cdr').set('content-type', 'application/json').send('{}');
    expect(none.status).toBe(401);
    expect((await postCdr(t, call)).status).toBe(201); // not stored by the refused attempts
  });

  it('answers malformed payloads with 400, other types with 415, big ones with 413', async () => {
    const post = (type: string, body: string | Buffer) =>
      t.http().post('/api/v2/cdr').set('authorization', CDR_AUTH).set('content-type', type).send(body);
    const notJson = await post('application/json', '{"variables": ');
    expect(notJson.status).toBe(400);
    expect(notJson.body).toEqual({ error: { code: 'BAD_REQUEST', message: 'the CDR is not valid JSON' } });
    expect((await post('application/json', '[1,2]')).body.error.message).toBe(
      'the CDR has no "variables" object',
    );
    expect((await post('application/x-www-form-urlencoded', 'other=1')).status).toBe(400);
    expect((await post('application/x-www-form-urlencoded', 'cdr=%7Bnot%20json')).status).toBe(400);
    const noUuid = await post('application/json', JSON.stringify({ variables: { billsec: '3' } }));
    expect(noUuid.status).toBe(400);
    expect(noUuid.body.error.code).toBe('VALIDATION_FAILED');
    expect((await post('text/plain', 'hello')).status).toBe(415);
    const huge = await post('application/json', Buffer.alloc(1024 * 1024 + 10, 0x20));
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('takes the call UUID from the ?uuid= FreeSWITCH appends when the body lacks one', async () => {
    const uuid = randomUUID();
    const res = await t
      .http()
      .post(`/api/v2/cdr?uuid=${uuid}`)
      .set('authorization', CDR_AUTH)
      .set('content-type', 'application/json')
      .send(JSON.stringify({ variables: { billsec: '5', hangup_cause: 'NORMAL_CLEARING' } }));
    expect(res.status).toBe(201);
    expect(res.body.call_uuid).toBe(uuid);
  });
});

describe('GET /api/v2/call-recording', () => {
  let alice: string;
  let bob: string;
  let carol: string;
  const uuids = {
    aliceOut: randomUUID(),
    inboundToAlice: randomUUID(),
    bobToAlice: randomUUID(),
    bobOut: randomUUID(),
    unrelated: randomUUID(),
    missed: randomUUID(),
  };

  beforeAll(async () => {
    alice = await bearer(t, 'alice'); // 15550001000 / 1000
    bob = await bearer(t, 'rec-bob');
    carol = await bearer(t, 'rec-carol');
    const b = (await assign(t, bob)).body;
    await assign(t, carol);
    const base = 1795349703;
    const legs: Leg[] = [
      // A click-to-call of alice's, recorded.
      clickToCallLeg({
        uuid: uuids.aliceOut,
        extension: '1000',
        number: '15550001000',
        destination: '4930123456',
        start: base,
        billsec: 42,
      }),
      {
        uuid: uuids.inboundToAlice,
        direction: 'inbound',
        callerIdNumber: '+4930777',
        destinationNumber: '+15550001000',
        start: base + 60,
      },
      {
        uuid: uuids.bobToAlice,
        direction: 'inbound',
        callerIdNumber: b.extension,
        destinationNumber: '1000',
        start: base + 120,
        variables: { user_name: b.extension, domain_name: 'pbx.example.com', call_direction: 'local' },
      },
      {
        uuid: uuids.bobOut,
        direction: 'inbound',
        callerIdNumber: b.extension,
        destinationNumber: '4940555',
        start: base + 180,
        variables: {
          user_name: b.extension,
          call_direction: 'outbound',
          effective_caller_id_number: b.phone_number,
        },
      },
      {
        uuid: uuids.unrelated,
        direction: 'inbound',
        callerIdNumber: '4930999',
        destinationNumber: '15550001098',
        start: base + 240,
      },
      {
        uuid: uuids.missed,
        direction: 'inbound',
        callerIdNumber: '4930888',
        destinationNumber: '15550001000',
        start: base + 300,
        ringSeconds: null,
        hangupCause: 'NO_ANSWER',
      },
    ];
    for (const l of legs) expect((await postCdr(t, l, { encode: 'true' })).status).toBe(201);
  });

  const list = async (auth: string, query = '') => {
    const res = await t.http().get(`/api/v2/call-recording${query}`).set('authorization', auth);
    expect(res.status).toBe(200);
    return res;
  };
  const ours = (body: { call_uuid: string }[]) =>
    body.map((r) => r.call_uuid).filter((u) => (Object.values(uuids) as string[]).includes(u));

  it('shows each user only the calls of their own number or extension, newest first', async () => {
    expect(ours((await list(alice, '?limit=200')).body)).toEqual([
      uuids.missed,
      uuids.bobToAlice,
      uuids.inboundToAlice,
      uuids.aliceOut,
    ]);
    expect(ours((await list(bob)).body)).toEqual([uuids.bobOut, uuids.bobToAlice]);
    expect((await list(carol)).body).toEqual([]);
    expect((await list(await bearer(t, 'rec-unassigned'))).body).toEqual([]);
  });

  it('answers the Call record shape, mapped from the CDR', async () => {
    const records = (await list(alice, '?limit=200')).body;
    const out = records.find((r: { call_uuid: string }) => r.call_uuid === uuids.aliceOut);
    expect(out).toEqual({
      id: expect.any(Number),
      provider: 7,
      call_to: '4930123456',
      call_from: '1000',
      extension: 1000,
      bill_duration: 42,
      didnumber: 15550001000,
      domain: 'pbx.example.com',
      hangup_cause: 'NORMAL_CLEARING',
      recording: `https://recordings.example.com/fs/2026/11/22/${uuids.aliceOut}.wav`,
      call_direction: 'outbound',
      call_uuid: uuids.aliceOut,
      created_at: '2026-11-22T12:15:03.123Z',
      started_at: '2026-11-22T12:15:07.123Z',
    });
    const missed = records.find((r: { call_uuid: string }) => r.call_uuid === uuids.missed);
    expect(missed).toMatchObject({
      bill_duration: 0,
      hangup_cause: 'NO_ANSWER',
      recording: '',
      extension: 0,
      didnumber: 15550001000,
      call_direction: 'inbound',
      domain: 'pbx.example.com',
    });
    expect(missed.started_at).toBe(missed.created_at);
  });

  it('pages with limit and cursor through the Link header', async () => {
    const first = await list(alice, '?limit=2');
    expect(first.body).toHaveLength(2);
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.link)![1];
    expect(next).toMatch(/^\/api\/v2\/call-recording\?limit=2&cursor=/);
    const second = await list(alice, next.slice('/api/v2/call-recording'.length));
    expect(second.body).toHaveLength(2);
    expect(second.headers.link).toBeUndefined();
    expect(ours([...first.body, ...second.body])).toEqual([
      uuids.missed,
      uuids.bobToAlice,
      uuids.inboundToAlice,
      uuids.aliceOut,
    ]);
    const forged = Buffer.from(JSON.stringify(['2026-11-22T00:00:00.000Z', 'x'])).toString('base64url');
    const bad = await t.http().get(`/api/v2/call-recording?cursor=${forged}`).set('authorization', alice);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('is callRecords(first, after) in GraphQL', async () => {
    const query = `query($after: String) { callRecords(first: 3, after: $after) {
      nodes { callUuid didNumber extension recording } pageInfo { hasNextPage endCursor } } }`;
    const page1 = await t.gql(query, {}, alice);
    expect(page1.body.data.callRecords.nodes.map((n: { callUuid: string }) => n.callUuid)).toEqual([
      uuids.missed,
      uuids.bobToAlice,
      uuids.inboundToAlice,
    ]);
    expect(page1.body.data.callRecords.pageInfo.hasNextPage).toBe(true);
    const page2 = await t.gql(query, { after: page1.body.data.callRecords.pageInfo.endCursor }, alice);
    expect(page2.body.data.callRecords.nodes).toEqual([
      {
        callUuid: uuids.aliceOut,
        didNumber: '15550001000',
        extension: '1000',
        recording: `https://recordings.example.com/fs/2026/11/22/${uuids.aliceOut}.wav`,
      },
    ]);
    expect(page2.body.data.callRecords.pageInfo.hasNextPage).toBe(false);
  });
});
