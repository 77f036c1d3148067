import type { MikroORM } from '@mikro-orm/postgresql';
import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';
import { OidcProviderState } from './dev-issuer.entity';
import { sweeper } from './sweeper';

const SWEEP_INTERVAL_MS = 5 * 60_000;

/** oidc-provider's storage in PostgreSQL (table `oidc_provider_state`), shared by every process. */
export function postgresAdapter(orm: MikroORM): AdapterFactory {
  const sweep = sweeper(SWEEP_INTERVAL_MS, () =>
    orm.em.fork().nativeDelete(OidcProviderState, { expiresAt: { $lt: new Date() } }),
  );
  return (model) => new PostgresAdapter(orm, model, sweep);
}

class PostgresAdapter implements Adapter {
  constructor(
    private readonly orm: MikroORM,
    private readonly model: string,
    private readonly sweep: () => void,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    this.sweep();
    const row = {
      model: this.model,
      id,
      payload: payload as Record<string, unknown>,
      grantId: payload.grantId ?? null,
      uid: payload.uid ?? null,
      userCode: payload.userCode ?? null,
      expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
      consumedAt: null,
    };
    await this.orm.em
      .fork()
      .createQueryBuilder(OidcProviderState)
      .insert(row)
      .onConflict(['model', 'id'])
      .merge()
      .execute();
  }

  find(id: string) {
    return this.findOne({ id });
  }

  findByUid(uid: string) {
    return this.findOne({ uid });
  }

  findByUserCode(userCode: string) {
    return this.findOne({ userCode });
  }

  async consume(id: string): Promise<void> {
    await this.orm.em
      .fork()
      .nativeUpdate(OidcProviderState, { model: this.model, id }, { consumedAt: new Date() });
  }

  async destroy(id: string): Promise<void> {
    await this.orm.em.fork().nativeDelete(OidcProviderState, { model: this.model, id });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.orm.em.fork().nativeDelete(OidcProviderState, { model: this.model, grantId });
  }

  private async findOne(where: { id?: string; uid?: string; userCode?: string }) {
    const row = await this.orm.em.fork().findOne(OidcProviderState, { model: this.model, ...where });
    if (!row || (row.expiresAt && row.expiresAt.getTime() <= Date.now())) return undefined;
    const consumed = row.consumedAt ? { consumed: Math.floor(row.consumedAt.getTime() / 1000) } : {};
    return { ...row.payload, ...consumed } as AdapterPayload;
  }
}
