import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { Request } from 'express';
import type { RestResponse, RouteDoc } from '../src/http/openapi/openapi.docs';

/** One legacy REST path: the GraphQL operation it runs, how it maps in and out, and its schemas. */
export interface RestRoute<TData = unknown, TVars = unknown> extends RouteDoc {
  document: TypedDocumentNode<TData, TVars>;
  variables: (req: Request) => TVars;
  respond: (data: TData, req: Request) => RestResponse;
}

/** Declares a route with its types inferred from the typed document. */
export function route<TData, TVars>(r: RestRoute<TData, TVars>): RestRoute {
  return r as unknown as RestRoute;
}
