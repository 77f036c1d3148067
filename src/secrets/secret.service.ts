import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ownerOf, type Owner, type Principal } from '../common/principal';
import { AppError } from '../common/errors';
import type { SecretBox } from '../common/sealing';
import type { AuditLog } from '../teams/audit.service';
import { authorize } from '../teams/team.roles';
import { Secret } from './secret.entity';
import { secretNameProblem } from './secret.names';
import type { SecretValue } from './secret.redact';

export const SECRET_LIMITS = {
  /** UTF-8 bytes of one value. */
  valueBytes: 64 * 1024,
  perOwner: 100,
} as const;

/** A secret as answered: never its value. */
export type SecretView = Pick<Secret, 'name' | 'createdAt' | 'updatedAt'>;

const sealContext = (owner: Owner, name: string) => `secret:${owner.type}:${owner.id}:${name}`;

/**
 * Owners' named secrets. A user token keeps its user's secrets, a team's principal the team's:
 * every member reads the names, admins and owners set and delete them (the role matrix's
 * `manage`). Values are sealed before they reach the database and opened only for the jobs that
 * need them.
 */
export class SecretService {
  constructor(
    private readonly orm: MikroORM,
    /** The sealing box; rejects (503) when no key may be had (production without SEALING_KEY). */
    private readonly box: () => Promise<SecretBox>,
    /** Team changes leave audit records (none in scripts). */
    private readonly audit: AuditLog | null = null,
  ) {}

  /** The owner's secrets by name: names and times only. */
  async list(principal: Principal): Promise<SecretView[]> {
    authorize(principal, 'read', "read the team's secrets");
    const owner = ownerOf(principal);
    return this.orm.em
      .fork()
      .find(
        Secret,
        { ownerType: owner.type, ownerId: owner.id },
        { fields: ['name', 'createdAt', 'updatedAt'], orderBy: { name: 'asc' } },
      );
  }

  /** Creates or replaces a secret; checked whole before anything is written. */
  async put(principal: Principal, name: string, value: unknown): Promise<SecretView> {
    authorize(principal, 'manage', "set the team's secrets");
    const owner = ownerOf(principal);
    const problems: Record<string, string> = {};
    const nameProblem = secretNameProblem(name);
    if (nameProblem) problems.name = nameProblem;
    const valueProblem = checkValue(value);
    if (valueProblem) problems.value = valueProblem;
    if (Object.keys(problems).length) throw AppError.validation(problems);
    const sealed = (await this.box()).seal(value as string, sealContext(owner, name));
    return this.orm.em.fork().transactional(async (em) => {
      const others = { ownerType: owner.type, ownerId: owner.id, name: { $ne: name } };
      if ((await em.count(Secret, others)) >= SECRET_LIMITS.perOwner)
        throw new AppError(
          'CONFLICT',
          `an owner keeps at most ${SECRET_LIMITS.perOwner} secrets; delete one first`,
        );
      const now = new Date();
      const [row] = await em
        .createQueryBuilder(Secret)
        .insert({
          id: randomUUID(),
          ownerType: owner.type,
          ownerId: owner.id,
          name,
          sealedValue: sealed,
          createdAt: now,
          updatedAt: now,
        })
        .onConflict(['owner_type', 'owner_id', 'name'])
        .merge(['sealedValue', 'updatedAt'])
        .returning(['name', 'created_at', 'updated_at'])
        .execute('all');
      // The record names the secret, never its value.
      this.audit?.recordForTeam(em, principal, {
        action: 'secret.set',
        targetType: 'secret',
        targetId: name,
      });
      await em.flush();
      return { name: row.name, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) };
    });
  }

  /** Deletes a secret by name; answers the name, or 404. */
  async delete(principal: Principal, name: string): Promise<string> {
    authorize(principal, 'manage', "delete the team's secrets");
    const owner = ownerOf(principal);
    return this.orm.em.fork().transactional(async (em) => {
      const n = await em.nativeDelete(Secret, { ownerType: owner.type, ownerId: owner.id, name });
      if (!n) throw AppError.notFound('secret');
      this.audit?.recordForTeam(em, principal, {
        action: 'secret.deleted',
        targetType: 'secret',
        targetId: name,
      });
      await em.flush();
      return name;
    });
  }

  /** Which of `names` the owner has no secret for (a deployment of a model that needs them is refused). */
  async missing(owner: Owner, names: readonly string[]): Promise<string[]> {
    if (!names.length) return [];
    const rows = await this.orm.em
      .fork()
      .find(
        Secret,
        { ownerType: owner.type, ownerId: owner.id, name: { $in: [...names] } },
        { fields: ['name'] },
      );
    const have = new Set(rows.map((r) => r.name));
    return names.filter((n) => !have.has(n));
  }

  /** The owner's secrets of these names, opened: for a job's environment only, never for an answer. */
  async open(owner: Owner, names: readonly string[]): Promise<SecretValue[]> {
    if (!names.length) return [];
    const rows = await this.orm.em
      .fork()
      .find(
        Secret,
        { ownerType: owner.type, ownerId: owner.id, name: { $in: [...names] } },
        { fields: ['name', 'sealedValue'] },
      );
    const box = await this.box();
    return rows.map((r) => ({ name: r.name, value: box.open(r.sealedValue, sealContext(owner, r.name)) }));
  }
}

function checkValue(value: unknown): string | null {
  if (typeof value !== 'string') return 'is required, as a string';
  if (!value.length) return 'must not be empty';
  if (Buffer.byteLength(value, 'utf8') > SECRET_LIMITS.valueBytes)
    return `must be at most ${SECRET_LIMITS.valueBytes} bytes`;
  // An environment variable cannot carry a NUL.
  if (value.includes('\0')) return 'must not contain NUL characters';
  return null;
}
