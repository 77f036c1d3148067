import { createParameterDecorator, Field, ObjectType, type ClassType } from 'type-graphql';
import { requirePrincipal, type Principal } from '../auth/principal';
import type { Page } from '../common/pagination';
import type { RequestContext } from './context';

/** Injects the authenticated principal; an anonymous request gets UNAUTHENTICATED. */
export function CurrentPrincipal() {
  return createParameterDecorator<RequestContext>(({ context }): Principal =>
    requirePrincipal(context.principal),
  );
}

@ObjectType()
export class PageInfo {
  @Field(() => Boolean)
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Pass as `after` to get the next page.' })
  endCursor!: string | null;
}

export interface ConnectionShape<T> {
  nodes: T[];
  edges: { cursor: string; node: T }[];
  pageInfo: PageInfo;
}

/** A Relay-style connection type for `Item`, named `<name>Connection`. */
export function Connection<T extends object>(Item: ClassType<T>, name: string) {
  @ObjectType(`${name}Edge`)
  class Edge {
    @Field(() => String)
    cursor!: string;

    @Field(() => Item)
    node!: T;
  }

  @ObjectType(`${name}Connection`)
  class ConnectionType implements ConnectionShape<T> {
    @Field(() => [Item])
    nodes!: T[];

    @Field(() => [Edge])
    edges!: Edge[];

    @Field(() => PageInfo)
    pageInfo!: PageInfo;
  }
  return ConnectionType;
}

/** Builds a connection from a page; `cursorOf` gives each node's cursor. */
export function toConnection<T, U>(
  page: Page<T>,
  view: (item: T) => U,
  cursorOf: (item: T) => string,
): ConnectionShape<U> {
  const nodes = page.items.map(view);
  return {
    nodes,
    // Cursors cost an encoding per item: made only when a query asks for edges.
    get edges() {
      return page.items.map((item, i) => ({ cursor: cursorOf(item), node: nodes[i] }));
    },
    pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.endCursor },
  };
}
