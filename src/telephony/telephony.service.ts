import { randomUUID } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { requireUserToken, type Principal } from '../common/principal';
import type { Config } from '../config';
import { RateLimit } from '../rate-limits/rate-limiter';
import { AppError } from '../common/errors';
import { findPage, mapPage, pageSize, type Page, type PageArgs } from '../common/pagination';
import type { CallOriginator } from './call-originator.port';
import { firstFreeValue } from './number-pool';
import { CallRecord, NumberAssignment } from './telephony.entity';

/** A call leg as the PBX reports it, before the service stores it. */
export interface CallRecordInput {
  callUuid: string;
  callFrom: string;
  callTo: string;
  extension: string | null;
  didnumber: string | null;
  /** Null when the PBX did not say: TELEPHONY_SIP_DOMAIN is stored instead. */
  domain: string | null;
  hangupCause: string;
  callDirection: string;
  billDuration: number;
  recordingPath: string | null;
  createdAt: Date;
  startedAt: Date;
}

export interface NumberAssignmentView {
  role: 'user';
  phoneNumber: string;
  extension: string;
  /** The identity provider's subject of the user. */
  idpId: string;
  createdAt: Date;
  updatedAt: Date;
}

export type CallRecordView = Omit<CallRecord, 'recordingPath'> & { recording: string | null };

export interface CallLinkResult {
  callUuid: string;
  status: 'initiated';
}

const DIGITS = /^[0-9]{1,15}$/;
const RECORD_ID = /^[0-9]{1,18}$/;

type TelephonyConfig = Pick<
  Config,
  | 'telephonyNumbers'
  | 'telephonyExtensions'
  | 'telephonySipDomain'
  | 'telephonyRecordingsUrl'
  | 'telephonyRecordingsDir'
  | 'telephonyProviderId'
  | 'telephonyCallLinkPerMinute'
>;

/** Click-to-calls per user per minute, on the shared rate limits. */
export function callLinkLimit(orm: MikroORM, config: Pick<Config, 'telephonyCallLinkPerMinute'>): RateLimit {
  return new RateLimit(orm, {
    name: 'call-link',
    points: config.telephonyCallLinkPerMinute,
    windowSeconds: 60,
  });
}

export class TelephonyService {
  constructor(
    private readonly orm: MikroORM,
    private readonly config: TelephonyConfig,
    private readonly originator: CallOriginator,
    private readonly callLinks: RateLimit,
  ) {}

  /**
   * The user's number and extension; the first call draws the lowest free value of each pool.
   * Assignments are serialised by a transaction-scoped advisory lock (every API process takes
   * the same one), so concurrent first calls get distinct values; unique constraints back it up.
   */
  async assignNumber(principal: Principal): Promise<NumberAssignmentView> {
    requireUserToken(principal, 'hold a phone number: numbers are personal');
    const em = this.orm.em.fork();
    const existing = await em.findOne(NumberAssignment, { user: principal.user.id });
    if (existing) return assignmentView(existing, principal);
    if (!this.config.telephonyNumbers.length)
      throw new AppError('UNAVAILABLE', 'number assignment is not configured (TELEPHONY_NUMBERS is empty)');
    const assignment = await em.transactional(async (tx) => {
      await tx.execute(`select pg_advisory_xact_lock(hashtext('number_assignments'))`);
      const raced = await tx.findOne(NumberAssignment, { user: principal.user.id });
      if (raced) return raced;
      const phoneNumber = await firstFreeValue(tx, 'phone_number', this.config.telephonyNumbers);
      if (!phoneNumber) throw new AppError('CONFLICT', 'the phone number pool is exhausted');
      const extension = await firstFreeValue(tx, 'extension', this.config.telephonyExtensions);
      if (!extension) throw new AppError('CONFLICT', 'the extension pool is exhausted');
      return tx.create(NumberAssignment, { user: principal.user.id, phoneNumber, extension });
    });
    return assignmentView(assignment, principal);
  }

  /**
   * The user's call records, newest first: those whose caller or callee is the user's extension
   * or number (with or without a leading +), or whose extension or DID is the user's.
   */
  async callRecords(principal: Principal, args: PageArgs): Promise<Page<CallRecordView>> {
    requireUserToken(principal, 'read call records: numbers are personal');
    const size = pageSize(args.first);
    const em = this.orm.em.fork();
    const mine = await this.assignmentOf(em, principal);
    if (!mine) return { items: [], hasNextPage: false, endCursor: null };
    const { phoneNumber, extension } = mine;
    const parties = [extension, phoneNumber, `+${phoneNumber}`];
    const page = await findPage(
      em,
      CallRecord,
      {
        $or: [
          { callFrom: { $in: parties } },
          { callTo: { $in: parties } },
          { extension },
          { didnumber: phoneNumber },
        ],
      },
      { first: size, after: args.after },
      // Ids here are integers; a forged cursor must not reach the bigint comparison.
      { isId: (id) => typeof id === 'string' && RECORD_ID.test(id) },
    );
    return mapPage(page, (record) => this.recordView(record));
  }

  /**
   * Click-to-call: rings the caller's extension and connects it to the destination. The source
   * must be the caller's own number or extension; both numbers are digit strings, checked before
   * anything reaches the PBX. Limited per user per minute (TELEPHONY_CALL_LINK_PER_MINUTE).
   */
  async callLink(
    principal: Principal,
    input: { source: string; destination: string },
  ): Promise<CallLinkResult> {
    requireUserToken(principal, 'place calls: numbers are personal');
    const problems: Record<string, string> = {};
    for (const field of ['source', 'destination'] as const) {
      if (typeof input[field] !== 'string' || !DIGITS.test(input[field]))
        problems[field] = 'must be a string of 1 to 15 digits';
    }
    if (Object.keys(problems).length) throw AppError.validation(problems);
    const em = this.orm.em.fork();
    const mine = await this.assignmentOf(em, principal);
    if (!mine) throw new AppError('FORBIDDEN', 'you have no phone number yet: assign one first');
    if (input.source !== mine.phoneNumber && input.source !== mine.extension)
      throw new AppError('FORBIDDEN', 'the source must be your own phone number or extension');
    await this.callLinks.take(
      principal.user.id,
      `at most ${this.config.telephonyCallLinkPerMinute} calls a minute; try again shortly`,
    );
    const callUuid = randomUUID();
    await this.originator.originate({
      callUuid,
      extension: mine.extension,
      phoneNumber: mine.phoneNumber,
      source: input.source,
      destination: input.destination,
    });
    return { callUuid, status: 'initiated' };
  }

  /**
   * Stores a call leg once: a CDR posted again (the PBX retries until it gets a 2xx) finds the
   * first one by its call UUID and changes nothing. Not a user operation: the caller is the PBX.
   */
  async recordCall(input: CallRecordInput): Promise<{ id: string; created: boolean }> {
    const em = this.orm.em.fork();
    const result = await em
      .createQueryBuilder(CallRecord)
      .insert({
        ...input,
        domain: input.domain ?? this.config.telephonySipDomain ?? '',
        provider: this.config.telephonyProviderId,
      })
      .onConflict('callUuid')
      .ignore()
      .execute('run');
    if (result.affectedRows) return { id: String(result.insertId), created: true };
    const existing = await em.findOneOrFail(CallRecord, { callUuid: input.callUuid });
    return { id: existing.id, created: false };
  }

  close(): Promise<void> {
    return this.originator.close();
  }

  private assignmentOf(em: EntityManager, principal: Principal): Promise<NumberAssignment | null> {
    return em.findOne(NumberAssignment, { user: principal.user.id });
  }

  private recordView(r: CallRecord): CallRecordView {
    return {
      id: r.id,
      provider: r.provider,
      callUuid: r.callUuid,
      callFrom: r.callFrom,
      callTo: r.callTo,
      extension: r.extension,
      didnumber: r.didnumber,
      domain: r.domain,
      hangupCause: r.hangupCause,
      callDirection: r.callDirection,
      billDuration: r.billDuration,
      recording: this.recordingUrl(r.recordingPath),
      createdAt: r.createdAt,
      startedAt: r.startedAt,
    };
  }

  /**
   * A recording's public URL: kept as it is when the PBX wrote to a URL, otherwise the path below
   * TELEPHONY_RECORDINGS_DIR (its file name when outside) under TELEPHONY_RECORDINGS_URL.
   */
  private recordingUrl(path: string | null): string | null {
    if (!path) return null;
    if (/^https?:\/\//i.test(path)) return path;
    const base = this.config.telephonyRecordingsUrl;
    if (!base) return null;
    const dir = `${this.config.telephonyRecordingsDir}/`;
    const relative = path.startsWith(dir) ? path.slice(dir.length) : path.slice(path.lastIndexOf('/') + 1);
    const segments = relative.split('/').filter((s) => s && s !== '.' && s !== '..');
    return segments.length ? `${base}/${segments.map(encodeURIComponent).join('/')}` : null;
  }
}

function assignmentView(assignment: NumberAssignment, principal: Principal): NumberAssignmentView {
  return {
    role: 'user',
    phoneNumber: assignment.phoneNumber,
    extension: assignment.extension,
    idpId: principal.user.subject,
    createdAt: assignment.createdAt,
    updatedAt: assignment.updatedAt,
  };
}
