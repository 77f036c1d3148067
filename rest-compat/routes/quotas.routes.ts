import { GetQuotaDocument, SetQuotaDocument, type RestQuotaFragment } from '../generated/graphql';
import { AppError } from '../../src/common/errors';
import { body } from '../../src/http/http.rest';
import { route } from '../route';
import {
  arrayOf,
  enumOf,
  integer,
  mapOf,
  nullable,
  number,
  object,
  requestBody,
  string,
  uuid,
} from '../../src/http/openapi/json-schema';

const quotaSchema = object({
  owner: object({ type: enumOf(['user', 'team']), id: uuid }),
  max_running_jobs: { ...nullable(integer), description: 'null: unlimited' },
  running_jobs: integer,
  machines: arrayOf(
    object({
      machine_type: string,
      limit: { ...nullable(integer), description: 'null: unlimited' },
      in_use: integer,
    }),
  ),
  shares: number,
  recent_usage: {
    ...number,
    description: 'machine-seconds of ended jobs, decayed (FAIR_SHARE_HALF_LIFE_HOURS)',
  },
});

const quotaJson = (q: RestQuotaFragment) => ({
  owner: { type: q.ownerType, id: q.ownerId },
  max_running_jobs: q.maxRunningJobs,
  running_jobs: q.runningJobs,
  machines: q.machines.map((m) => ({ machine_type: m.machineType, limit: m.limit, in_use: m.inUse })),
  shares: q.shares,
  recent_usage: q.recentUsage,
});

/** `null`, absent, or a value of the expected kind; anything else is VALIDATION_FAILED. */
function optional<T>(b: Record<string, unknown>, key: string, ok: (v: unknown) => v is T, what: string) {
  const v = b[key];
  if (v === undefined || v === null) return null;
  if (!ok(v)) throw AppError.validation({ [key]: what });
  return v;
}
const isNumber = (v: unknown): v is number => typeof v === 'number';

/** Quotas (docs/governance.md): operators set them per owner; owners read theirs. */
export const quotaRoutes = [
  route({
    method: 'get',
    path: '/api/v1/billing/quota',
    summary: "The caller's owner's quotas and fair-share shares, with what is in use",
    response: quotaSchema,
    document: GetQuotaDocument,
    variables: () => ({}),
    respond: ({ quota }) => ({ status: 200, body: quotaJson(quota) }),
  }),
  route({
    method: 'put',
    path: '/api/v1/admin/quotas/:owner_type/:owner_id',
    summary: "Set an owner's quotas and shares, replacing the earlier ones (operators only)",
    request: requestBody({
      max_running_jobs: { ...nullable(integer), description: 'null or absent: QUOTA_MAX_RUNNING_JOBS' },
      machines: {
        ...mapOf(nullable(integer)),
        description:
          'machine type -> machines in use at most (null: unlimited); types not named: QUOTA_MAX_MACHINES',
      },
      shares: { ...nullable(number), description: 'fair-share weight; null or absent: 1' },
    }),
    response: quotaSchema,
    document: SetQuotaDocument,
    variables: (req) => {
      const b = body(req);
      const machines = optional(
        b,
        'machines',
        (v): v is Record<string, unknown> => typeof v === 'object' && !Array.isArray(v),
        'must be an object of machine type -> count',
      );
      return {
        ownerType: String(req.params.owner_type),
        ownerId: String(req.params.owner_id),
        input: {
          maxRunningJobs: optional(b, 'max_running_jobs', isNumber, 'must be an integer or null'),
          shares: optional(b, 'shares', isNumber, 'must be a number or null'),
          machines: Object.entries(machines ?? {}).map(([machineType, limit]) => {
            if (limit !== null && typeof limit !== 'number')
              throw AppError.validation({ [`machines.${machineType}`]: 'must be an integer or null' });
            return { machineType, limit };
          }),
        },
      };
    },
    respond: ({ setQuota }) => ({ status: 200, body: quotaJson(setQuota) }),
  }),
];
