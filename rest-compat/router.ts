import { Router, type Request, type Response } from 'express';
import { validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { AppError, toAppError, withoutSuggestions } from '../src/common/errors';
import { inputProblems } from '../src/graphql/graphql.inputs';
import type { RequestContext } from '../src/graphql/graphql.context';
import { sendError, sendJson } from '../src/http/http.helpers';
import type { RestRoute } from './route';

export interface RestRouterOptions {
  schema: GraphQLSchema;
  routes: RestRoute[];
  contextOf: (req: Request, res: Response) => RequestContext;
}

/** A route of the table with its handler, which answers every outcome itself (errors included). */
export interface RestHandler {
  route: RestRoute;
  handle: (req: Request, res: Response) => Promise<void>;
}

/** Refuses to start when a route's document does not match the schema. */
export function validateRoutes(schema: GraphQLSchema, routes: RestRoute[]): void {
  const problems = routes.flatMap((r) =>
    validate(schema, r.document).map((e) => `${r.method.toUpperCase()} ${r.path}: ${e.message}`),
  );
  if (problems.length)
    throw new Error(`REST compatibility documents do not match the schema:\n${problems.join('\n')}`);
}

/** Each route's pre-parsed GraphQL document, run in-process with the request's own context. */
export function restHandlers({ schema, routes, contextOf }: RestRouterOptions): RestHandler[] {
  validateRoutes(schema, routes);
  return routes.map((r) => {
    // Each document is fixed, so it is compiled to a plain function once (graphql-jit): the
    // same result as graphql-js's execute, without interpreting the document on every request.
    const compiled = compileQuery(schema, r.document as DocumentNode);
    if (!isCompiledQuery(compiled))
      throw new Error(`${r.method} ${r.path}: ${JSON.stringify(compiled.errors)}`);
    const operation = r.document.definitions.find((d) => d.kind === 'OperationDefinition')?.name?.value;
    const handle = async (req: Request, res: Response): Promise<void> => {
      res.locals.graphqlOperation = operation; // named on the request's log line
      const context = contextOf(req, res);
      try {
        const variables = r.variables(req) as Record<string, unknown>;
        const problem = inputProblems(schema, r.document, undefined, variables);
        if (problem) throw problem;
        const result = await compiled.query(undefined, context, variables);
        if (result.errors?.length) {
          const [first] = result.errors;
          // Without data the request itself did not fit the schema (variable coercion): 400.
          const { error, unexpected } =
            result.data === undefined
              ? { error: new AppError('BAD_REQUEST', withoutSuggestions(first.message)), unexpected: false }
              : toAppError(first.originalError ?? first);
          if (unexpected) context.log.error({ err: first.originalError }, 'unexpected error');
          return sendError(req, res, error);
        }
        const out = r.respond(result.data as never, req);
        if (out.headers) for (const k in out.headers) res.setHeader(k, out.headers[k]);
        if (out.body === undefined) return void res.status(out.status ?? 204).end();
        sendJson(req, res, out.status ?? 200, out.body);
      } catch (err) {
        const { error, unexpected } = toAppError(err);
        if (unexpected) context.log.error({ err }, 'unexpected error');
        sendError(req, res, error);
      }
    };
    return { route: r, handle };
  });
}

/** The whole table as an Express router (every path, every method). */
export function createRestRouter(handlers: RestHandler[]): Router {
  const router = Router();
  for (const { route, handle } of handlers) router[route.method](route.path, handle);
  return router;
}
