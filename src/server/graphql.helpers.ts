import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
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

/**
 * The names of the fields selected directly below the field being resolved, through fragments
 * (whether `@skip`/`@include` would drop them is not asked: the set may be larger, never smaller).
 */
export function selectedFields(info: GraphQLResolveInfo): Set<string> {
  const names = new Set<string>();
  const visit = (set: SelectionSetNode | undefined) => {
    for (const s of set?.selections ?? []) {
      if (s.kind === Kind.FIELD) names.add(s.name.value);
      else if (s.kind === Kind.INLINE_FRAGMENT) visit(s.selectionSet);
      else visit(info.fragments[s.name.value]?.selectionSet);
    }
  };
  for (const node of info.fieldNodes) visit(node.selectionSet);
  return names;
}
