import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import { createParameterDecorator, Field, ObjectType, type ClassType } from 'type-graphql';
import { requirePrincipal, type Principal } from '../common/principal';
import type { Page } from '../common/pagination';
import type { RequestContext } from './graphql.context';

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

  @Field(() => Boolean, {
    description:
      'The page stopped at the scan budget (filters its index does not serve): it may hold fewer ' +
      'nodes than `first`, none even, while more follow after `endCursor`. Follow `hasNextPage`, ' +
      'not the count of nodes.',
  })
  scanLimited!: boolean;
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
    pageInfo: {
      hasNextPage: page.hasNextPage,
      endCursor: page.endCursor,
      scanLimited: page.scanLimited ?? false,
    },
  };
}

/** The fields of a selection set, through inline and named fragments. */
function fieldsOf(
  set: SelectionSetNode | undefined,
  fragments: GraphQLResolveInfo['fragments'],
): FieldNode[] {
  const out: FieldNode[] = [];
  for (const s of set?.selections ?? []) {
    if (s.kind === Kind.FIELD) out.push(s);
    else {
      const inner = s.kind === Kind.INLINE_FRAGMENT ? s.selectionSet : fragments[s.name.value]?.selectionSet;
      out.push(...fieldsOf(inner, fragments));
    }
  }
  return out;
}

/** The fields called `name` of a selection set, through inline and named fragments. */
function fieldsNamed(
  set: SelectionSetNode | undefined,
  name: string,
  fragments: GraphQLResolveInfo['fragments'],
): FieldNode[] {
  return fieldsOf(set, fragments).filter((f) => f.name.value === name);
}

/**
 * The names of the fields the operation selects at `path` below the field being resolved (say
 * `nodes.model` under a connection; any of `paths`), or null when it does not ask for it: a list
 * reads what its items' fields will need, and only that, in its own statement. `@skip`/`@include`
 * are not looked at: at worst a column is read for nothing.
 */
export function selectedFieldsAt(info: GraphQLResolveInfo, ...paths: string[]): Set<string> | null {
  // The same document asks the same every time: remembered by its field node (while it lives).
  const key = paths.join(' ');
  let known = selectedAt.get(info.fieldNodes[0]);
  if (!known) selectedAt.set(info.fieldNodes[0], (known = new Map()));
  if (known.has(key)) return known.get(key)!;
  let found: Set<string> | null = null;
  for (const path of paths) {
    let nodes: readonly FieldNode[] = info.fieldNodes;
    for (const name of path.split('.'))
      nodes = nodes.flatMap((n) => fieldsNamed(n.selectionSet, name, info.fragments));
    if (!nodes.length) continue;
    found ??= new Set();
    for (const f of nodes.flatMap((n) => fieldsOf(n.selectionSet, info.fragments))) found.add(f.name.value);
  }
  known.set(key, found);
  return found;
}
const selectedAt = new WeakMap<FieldNode, Map<string, Set<string> | null>>();

/**
 * The names of the fields selected directly below the field being resolved, through fragments
 * (`@skip`/`@include` are not looked at: the set may be larger, never smaller).
 */
export function selectedFields(info: GraphQLResolveInfo): Set<string> {
  return new Set(
    info.fieldNodes.flatMap((n) => fieldsOf(n.selectionSet, info.fragments)).map((f) => f.name.value),
  );
}
