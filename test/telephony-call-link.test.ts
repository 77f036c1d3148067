import { startTestApp, type TestApp } from './helpers/app';
import { EslPeer } from './helpers/esl-peer';

/** Click-to-call against a local event-socket peer that speaks FreeSWITCH's protocol. */

let peer: EslPeer;
let t: TestApp;

const eslEnv = (port: number, password = 's3cret') => ({
  TELEPHONY_NUMBERS: '15550001000-15550001999',
  TELEPHONY_EXTENSIONS: '1000-1999',
  TELEPHONY_SIP_DOMAIN: 'pbx.example.com',
  TELEPHONY_CALL_LINK_PER_MINUTE: '3',
  FREESWITCH_ESL_HOST: '127.0.0.1',
  FREESWITCH_ESL_PORT: String(port),
  FREESWITCH_ESL_PASSWORD: password,
  FREESWITCH_GATEWAY: 'pstn',
  FREESWITCH_ESL_MAX_BACKOFF_MS: '200',
});

beforeAll(async () => {
  peer = await EslPeer.start('s3cret');
  t = await startTestApp(eslEnv(peer.port));
  await peer.waitUntil(() => peer.logins >= 1);
});
afterAll(async () => {
  await t.close();
  await peer.stop();
});

interface Caller {
  auth: string;
  number: string;
  extension: string;
}

async function caller(app: TestApp, sub: string): Promise<Caller> {
  const auth = `Bearer ${await app.tokenFor(sub)}`;
  const res = await app.http().get('/api/v2/assign-number').set('authorization', auth);
  expect(res.status).toBe(200);
  return { auth, number: res.body.phone_number, extension: res.body.extension };
}

const callLink = (app: TestApp, auth: string, query: string) =>
  app.http().get(`/api/v2/call-link?${query}`).set('authorization', auth);

describe('GET /api/v2/call-link', () => {
  it('sends bgapi originate with a pre-assigned call UUID and answers it', async () => {
    const alice = await caller(t, 'alice');
    const before = peer.commands.length;
    const res = await callLink(
      t,
      alice.auth,
      `source_number=${alice.extension}&destination_number=4930123456`,
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ call_uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'initiated' });
    const uuid = res.body.call_uuid;
    expect(peer.commands.slice(before)).toEqual([
      {
        jobUuid: uuid,
        command:
          `originate {origination_uuid=${uuid},origination_caller_id_number=4930123456,` +
          `origination_caller_id_name=4930123456,cdr_call_direction=outbound,cdr_call_from=${alice.extension},` +
          `cdr_call_to=4930123456,cdr_extension=${alice.extension},cdr_didnumber=${alice.number}}` +
          `user/${alice.extension}@pbx.example.com ` +
          `&bridge({origination_caller_id_number=${alice.number}}sofia/gateway/pstn/4930123456)`,
      },
    ]);

    // The own phone number is a valid source too; the BACKGROUND_JOB in between did not confuse the client.
    const second = await callLink(t, alice.auth, `source_number=${alice.number}&destination_number=4930999`);
    expect(second.status).toBe(200);
    expect(second.body.call_uuid).not.toBe(uuid);
    expect(peer.commands.at(-1)!.command).toContain('cdr_call_from=' + alice.number);
  });

  it('is the callLink mutation in GraphQL', async () => {
    const gina = await caller(t, 'gina');
    const res = await t.gql(
      'mutation($s: String!, $d: String!) { callLink(source: $s, destination: $d) { callUuid status } }',
      { s: gina.extension, d: '4930123456' },
      gina.auth,
    );
    expect(res.body.data.callLink).toEqual({ callUuid: expect.any(String), status: 'initiated' });
    expect(peer.commands.at(-1)!.jobUuid).toBe(res.body.data.callLink.callUuid);
  });

  describe('refuses hostile numbers before anything reaches FreeSWITCH', () => {
    let bob: Caller;
    let other: Caller;
    beforeAll(async () => {
      bob = await caller(t, 'bob');
      other = await caller(t, 'bob-neighbour');
    });

    const hostile: [string, (b: Caller) => string, number][] = [
      ['a newline', (b) => `source_number=${b.extension}&destination_number=4930%0Aapi%20shutdown`, 400],
      ['a carriage return', (b) => `source_number=${b.extension}&destination_number=4930%0D123`, 400],
      ['a space', (b) => `source_number=${b.extension}&destination_number=4930%20123`, 400],
      [
        'braces',
        (b) => `source_number=${b.extension}&destination_number=%7Bignore_early_media%3Dtrue%7D4930`,
        400,
      ],
      ['a comma', (b) => `source_number=${b.extension}&destination_number=4930,123`, 400],
      ['a pipe', (b) => `source_number=${b.extension}&destination_number=4930%7C123`, 400],
      ['letters', (b) => `source_number=${b.extension}&destination_number=49abc`, 400],
      ['an encoded plus', (b) => `source_number=${b.extension}&destination_number=%2B4930123456`, 400],
      ['a raw plus', (b) => `source_number=${b.extension}&destination_number=+4930123456`, 400],
      ['16 digits', (b) => `source_number=${b.extension}&destination_number=1234567890123456`, 400],
      ['an empty destination', (b) => `source_number=${b.extension}&destination_number=`, 400],
      ['no destination', (b) => `source_number=${b.extension}`, 400],
      [
        'a repeated destination',
        (b) => `source_number=${b.extension}&destination_number=1&destination_number=2`,
        400,
      ],
      [
        'a repeated source',
        (b) => `source_number=${b.extension}&source_number=${b.extension}&destination_number=1`,
        400,
      ],
      ['a newline in the source', (b) => `source_number=${b.extension}%0Aexit&destination_number=4930`, 400],
      ['braces in the source', (b) => `source_number=%7B${b.extension}%7D&destination_number=4930`, 400],
      ['no source', () => `destination_number=4930123456`, 400],
      [
        'a source that is not the caller’s',
        () => `source_number=${other.extension}&destination_number=4930`,
        403,
      ],
      ['another user’s number as source', () => `source_number=${other.number}&destination_number=4930`, 403],
      ['a source nobody holds', () => `source_number=1999999&destination_number=4930`, 403],
    ];

    it.each(hostile)('%s', async (_name, query, status) => {
      const before = peer.commands.length;
      const res = await callLink(t, bob.auth, query(bob));
      expect(res.status).toBe(status);
      expect(res.body.error.code).toBe(status === 400 ? 'VALIDATION_FAILED' : 'FORBIDDEN');
      expect(peer.commands.length).toBe(before);
    });

    it('the same through GraphQL', async () => {
      const before = peer.commands.length;
      const res = await t.gql(
        'mutation($s: String!, $d: String!) { callLink(source: $s, destination: $d) { callUuid } }',
        { s: bob.extension, d: '4930}\nbgapi originate' },
        bob.auth,
      );
      expect(res.body.errors[0].extensions).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: { destination: 'must be a string of 1 to 15 digits' },
      });
      expect(peer.commands.length).toBe(before);
    });

    it('refuses a user without a number and a team token (403)', async () => {
      const before = peer.commands.length;
      const auth = `Bearer ${await t.tokenFor('numberless')}`;
      const res = await callLink(t, auth, 'source_number=1000&destination_number=4930');
      expect(res.status).toBe(403);
      const team = await t.http().post('/api/v1/teams').set('authorization', bob.auth).send({ name: 'acme' });
      const key = await t
        .http()
        .post('/api/v1/tokens')
        .set('authorization', bob.auth)
        .send({ name: 'acme', team_id: team.body.id });
      const asTeam = await t
        .http()
        .get(`/api/v2/call-link?source_number=${bob.extension}&destination_number=4930`)
        .set('x-service-key', key.body.token);
      expect(asTeam.status).toBe(403);
      expect(asTeam.body.error.code).toBe('FORBIDDEN');
      expect(peer.commands.length).toBe(before);
    });
  });

  it('limits each user per minute: 429 with Retry-After, other users unaffected', async () => {
    const carol = await caller(t, 'carol');
    const dave = await caller(t, 'dave');
    const before = peer.commands.length;
    const query = `source_number=${carol.extension}&destination_number=4930123456`;
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push(await callLink(t, carol.auth, query));
    // Windows are calendar minutes: seven quick requests fall into at most two of them, so one
    // window holds at least four of them and the limit of three must refuse one.
    const placed = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    expect(placed.length + refused.length).toBe(7);
    expect(placed.length).toBeGreaterThanOrEqual(3);
    expect(placed.length).toBeLessThanOrEqual(6);
    expect(answers.slice(0, 3).every((r) => r.status === 200)).toBe(true);
    expect(peer.commands.length - before).toBe(placed.length);
    for (const r of refused) {
      expect(r.body.error.code).toBe('RATE_LIMITED');
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    const other = await callLink(
      t,
      dave.auth,
      `source_number=${dave.extension}&destination_number=4930123456`,
    );
    expect(other.status).toBe(200);
  });

  it('answers 503 while FreeSWITCH is down and works again once it is back', async () => {
    const erin = await caller(t, 'erin');
    const query = `source_number=${erin.extension}&destination_number=4930123456`;
    const logins = peer.logins;
    await peer.stop();
    const down = await callLink(t, erin.auth, query);
    expect(down.status).toBe(503);
    expect(down.body).toEqual({
      error: { code: 'UNAVAILABLE', message: expect.stringMatching(/event socket/) },
    });
    const again = await callLink(t, erin.auth, query);
    expect(again.status).toBe(503);
    expect(Number(again.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    await peer.restart();
    await peer.waitUntil(() => peer.logins > logins);
    const before = peer.commands.length;
    const up = await callLink(t, erin.auth, query);
    expect(up.status).toBe(200);
    expect(peer.commands.length).toBe(before + 1);
  });
});

describe('event socket connection', () => {
  it('answers 503 when FreeSWITCH refuses the password, and sends no command', async () => {
    const app = await startTestApp(eslEnv(peer.port, 'wrong'), { issuer: t.issuer });
    try {
      const frank = await caller(app, 'frank');
      const before = peer.commands.length;
      const res = await callLink(app, frank.auth, `source_number=${frank.extension}&destination_number=4930`);
      expect(res.status).toBe(503);
      expect(res.body.error.message).toMatch(/authentication refused/);
      expect(peer.commands.length).toBe(before);
    } finally {
      await app.close();
    }
  });

  it('is closed when the service stops', async () => {
    // Counted before the start: the service may connect before startTestApp returns.
    const open = peer.openConnections;
    const app = await startTestApp(eslEnv(peer.port), { issuer: t.issuer });
    await peer.waitUntil(() => peer.openConnections > open);
    await app.close();
    await peer.waitUntil(() => peer.openConnections === open);
    expect(peer.openConnections).toBe(open);
  });
});
