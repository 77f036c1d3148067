import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Records the model's definition as a new version when what runs differs from its latest version
 * (or it has none): one statement, so every path that writes a model (create, update, the seed of
 * the built-in models) follows the same rule. Two parameters: the new version's id, the model id.
 * Callers that change a model hold its row lock, so sequences do not race; the seed's racing
 * processes write the same version, and the second one's insert is dropped.
 */
const RECORD_VERSION = `
  insert into model_versions
    (id, model_id, sequence, container, command, machine_type, machine_count, timeout_seconds, args, secrets, created_at)
  select ?, m.id, coalesce(l.sequence, 0) + 1, m.container, m.command, m.machine_type, m.machine_count,
         m.timeout_seconds, m.args, m.secrets, clock_timestamp()
  from models m
  left join lateral (
    select * from model_versions v where v.model_id = m.id order by v.sequence desc limit 1
  ) l on true
  where m.id = ?
    and (l.id is null
      or (l.container, l.command, l.machine_type, l.machine_count, l.timeout_seconds, l.args, l.secrets)
         is distinct from
         (m.container, m.command, m.machine_type, m.machine_count, m.timeout_seconds, m.args, m.secrets))
  on conflict (model_id, sequence) do nothing`;

export async function recordVersion(em: EntityManager, modelId: string): Promise<void> {
  await em.execute(RECORD_VERSION, [randomUUID(), modelId]);
}
