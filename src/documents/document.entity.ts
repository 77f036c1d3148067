import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';

/**
 * A GraphQL document registered by its SHA-256 (automatic persisted queries): a client sends the
 * hash alone once the document is known. Shared by every process of the service, so a document
 * registered through one is answered by all. Documents never change under their hash.
 */
@Entity({ tableName: 'graphql_documents' })
export class PersistedDocument {
  /** Apollo's key: `apq:` and the hex SHA-256 of the document. */
  @PrimaryKey({ type: 'text' })
  key!: string;

  @Property({ type: 'text' })
  document!: string;

  /** Last registered or read (at most once a day): the oldest unused ones are pruned. */
  @Index()
  @Property({ type: 'datetime' })
  usedAt: Date = new Date();
}
