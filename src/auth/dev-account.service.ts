import type { MikroORM } from '@mikro-orm/postgresql';
import { AppError } from '../common/errors';
import { DevAccount } from './dev-issuer.entity';
import { hashPassword, UNUSABLE_HASH, verifyPassword } from './password';

export interface SignUpInput {
  username: string;
  password: string;
  email?: string;
  name?: string;
}

export interface SignInInput {
  username: string;
  password: string;
}

/** Failed sign-ins allowed before the account is locked; each further one doubles the lock. */
const FREE_FAILURES = 5;
const FIRST_LOCK_SECONDS = 30;
const MAX_LOCK_SECONDS = 15 * 60;

const USERNAME = /^[a-z0-9][a-z0-9._@-]{0,63}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

function validate(input: SignUpInput): Required<Pick<SignUpInput, 'username' | 'password'>> & {
  email: string | null;
  name: string | null;
} {
  const problems: Record<string, string> = {};
  const username = input.username.trim().toLowerCase();
  if (!USERNAME.test(username))
    problems.username = '1 to 64 letters, digits or . _ @ -, starting with a letter or digit';
  if (input.password.length < 8) problems.password = 'at least 8 characters';
  else if (input.password.length > 1024) problems.password = 'at most 1024 characters';
  const email = input.email?.trim() || null;
  if (email && (email.length > 254 || !EMAIL.test(email))) problems.email = 'not an email address';
  const name = input.name?.trim() || null;
  if (name && (name.length > 200 || /\p{Cc}/u.test(name)))
    problems.name = 'at most 200 characters, no control characters';
  if (Object.keys(problems).length) throw AppError.validation(problems);
  return { username, password: input.password, email, name };
}

/** The accounts of the built-in development identity provider. */
export class DevAccountService {
  constructor(private readonly orm: MikroORM) {}

  find(username: string): Promise<DevAccount | null> {
    return this.orm.em.fork().findOne(DevAccount, { username: username.toLowerCase() });
  }

  async signUp(input: SignUpInput): Promise<DevAccount> {
    const { username, password, email, name } = validate(input);
    const em = this.orm.em.fork();
    const passwordHash = await hashPassword(password);
    const inserted = await em
      .createQueryBuilder(DevAccount)
      .insert({ username, passwordHash, email, name, createdAt: new Date(), updatedAt: new Date() })
      .onConflict('username')
      .ignore()
      .execute('run');
    if (!inserted.affectedRows) throw AppError.validation({ username: 'this username is taken' });
    return em.findOneOrFail(DevAccount, { username });
  }

  /**
   * Checks the password. Repeated failures lock the account for a while (429 with the time to
   * wait); a success clears the count. An unknown username costs the same as a wrong password.
   */
  async signIn(input: SignInInput): Promise<DevAccount> {
    const em = this.orm.em.fork();
    const username = input.username.trim().toLowerCase();
    const account = await em.findOne(DevAccount, { username });
    const lockedFor = account?.lockedUntil
      ? Math.ceil((account.lockedUntil.getTime() - Date.now()) / 1000)
      : 0;
    if (lockedFor > 0) {
      throw new AppError(
        'RATE_LIMITED',
        `too many failed sign-ins: try again in ${lockedFor} seconds`,
        undefined,
        lockedFor,
      );
    }
    const ok = await verifyPassword(input.password, account?.passwordHash ?? UNUSABLE_HASH);
    if (!account || !ok) {
      if (account) await this.countFailure(username);
      throw new AppError('UNAUTHENTICATED', 'wrong username or password');
    }
    if (account.failedSignIns || account.lockedUntil) {
      await em.nativeUpdate(DevAccount, { username }, { failedSignIns: 0, lockedUntil: null });
    }
    return account;
  }

  /** One atomic update, so that parallel guesses cannot share a count. */
  private async countFailure(username: string): Promise<void> {
    await this.orm.em
      .fork()
      .getConnection()
      .execute(
        `update dev_accounts
          set failed_sign_ins = failed_sign_ins + 1,
              locked_until = case when failed_sign_ins + 1 >= ?
                then now() + make_interval(secs => least(?, ? * power(2, failed_sign_ins + 1 - ?)))
                else null end
        where username = ?`,
        [FREE_FAILURES, MAX_LOCK_SECONDS, FIRST_LOCK_SECONDS, FREE_FAILURES, username],
      );
  }
}
