import type { DocumentNode, GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { AppError } from '../src/common/errors';
import { actingAs, type Owner, type Principal } from '../src/common/principal';
import type { RequestContext } from '../src/graphql/graphql.context';
import type { JobRenderer } from '../src/webhooks/webhook.deliverer';
import { GetJobDocument, type GetJobQuery } from './generated/graphql';
import { jobJson } from './routes/jobs.routes';

/**
 * The job as `GET /api/v1/jobs/{id}` shows it to its owner, for webhook messages: the route's own
 * document and shape, run as the owner outside a request. Null when the job is gone.
 */
export function restJobRenderer(
  schema: GraphQLSchema,
  contextOf: (principal: Principal) => RequestContext,
): JobRenderer {
  const compiled = compileQuery(schema, GetJobDocument as DocumentNode);
  if (!isCompiledQuery(compiled)) throw new Error(`GetJob: ${JSON.stringify(compiled.errors)}`);
  return async (owner: Owner, jobId: string) => {
    const result = await compiled.query(undefined, contextOf(actingAs(owner)), { id: jobId });
    if (result.errors?.length) {
      const err = result.errors[0].originalError ?? result.errors[0];
      if (err instanceof AppError && err.code === 'NOT_FOUND') return null;
      throw err;
    }
    return jobJson((result.data as GetJobQuery).job);
  };
}
