import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { Request } from 'express';

export interface RestResponse {
  status?: number;
  /** Omitted for 204. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** One legacy REST path: the GraphQL operation it runs and how it maps in and out. */
export interface RestRoute<TData = unknown, TVars = unknown> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  document: TypedDocumentNode<TData, TVars>;
  variables: (req: Request) => TVars;
  respond: (data: TData, req: Request) => RestResponse;
}

/** Declares a route with its types inferred from the typed document. */
export function route<TData, TVars>(r: RestRoute<TData, TVars>): RestRoute {
  return r as unknown as RestRoute;
}
