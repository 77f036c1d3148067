import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { User } from './user.entity';

type ProfileFields = Pick<
  User,
  'username' | 'email' | 'emailVerified' | 'name' | 'nickname' | 'picture' | 'phoneNumber'
>;

/** The identity provider's claims a user is made from (verified by auth's token verifier). */
export interface UserClaims {
  sub: string;
  preferred_username?: string;
  nickname?: string;
  name?: string;
  email?: string;
  email_verified?: boolean;
  picture?: string;
  phone_number?: string;
}

function profileFromClaims(claims: UserClaims): ProfileFields {
  const str = (v: unknown) => (typeof v === 'string' && v.length <= 1000 ? v : null);
  return {
    username: str(claims.preferred_username) ?? str(claims.nickname) ?? str(claims.email) ?? claims.sub,
    email: str(claims.email),
    emailVerified: claims.email_verified === true,
    name: str(claims.name),
    nickname: str(claims.nickname),
    picture: str(claims.picture),
    phoneNumber: str(claims.phone_number),
  };
}

/**
 * The claims that update each profile field of a known user: a field none of whose claims is
 * present is kept (an email alone does not rename a user; a new user falls back to it).
 */
const SOURCES: Record<keyof ProfileFields, (keyof UserClaims)[]> = {
  username: ['preferred_username', 'nickname'],
  email: ['email'],
  emailVerified: ['email_verified'],
  name: ['name'],
  nickname: ['nickname'],
  picture: ['picture'],
  phoneNumber: ['phone_number'],
};

export class UserService {
  constructor(private readonly orm: MikroORM) {}

  /**
   * Creates the user on first sight of its `sub`, and keeps the profile in step with the claims.
   * Access tokens often carry few profile claims (Auth0's carry none): a field whose claims are
   * absent keeps its value, unless the claims are `complete` (an ID token's, at login).
   */
  async upsertFromClaims(claims: UserClaims, opts: { complete?: boolean } = {}): Promise<User> {
    const em = this.orm.em.fork();
    const profile = profileFromClaims(claims);
    const existing = await em.findOne(User, { subject: claims.sub });
    if (existing) {
      const changed = (Object.keys(profile) as (keyof ProfileFields)[]).filter(
        (k) =>
          existing[k] !== profile[k] && (opts.complete || SOURCES[k].some((c) => claims[c] !== undefined)),
      );
      if (changed.length) {
        em.assign(existing, Object.fromEntries(changed.map((k) => [k, profile[k]])));
        await em.flush();
      }
      return existing;
    }
    // Two first requests of the same user may race: the unique subject decides, both get the row.
    await em
      .createQueryBuilder(User)
      .insert({
        id: randomUUID(),
        subject: claims.sub,
        ...profile,
        createdAt: new Date(),
        updatedAt: new Date(),
      })
      .onConflict('subject')
      .ignore()
      .execute();
    return em.findOneOrFail(User, { subject: claims.sub }, { refresh: true });
  }
}
