import { AppError } from '../../src/common/errors';
import {
  BillingUsageDocument,
  GetBudgetDocument,
  SetBudgetDocument,
  type BudgetAction,
  type RestBudgetFragment,
} from '../generated/graphql';
import { body, queryString } from '../../src/http/http.rest';
import { route } from '../route';
import {
  arrayOf,
  decimal,
  enumOf,
  integer,
  isoTime,
  nullable,
  object,
  requestBody,
  string,
  url,
  uuid,
} from '../../src/http/openapi/json-schema';

/** `GET /api/v1/billing/usage?from=&to=`: the shape is ours (docs/billing.md). */
export const billingRoutes = [
  route({
    method: 'get',
    path: '/api/v1/billing/usage',
    summary: 'Metered compute and storage of a period, priced (docs/billing.md)',
    query: {
      from: {
        description: 'start of the period: an ISO 8601 date or date-time with a zone (give both or neither)',
      },
      to: { description: 'end of the period: a date is included, a date-time excluded; neither: this month' },
    },
    response: object({
      owner: object({ type: enumOf(['user', 'team']), id: uuid }),
      period: object({ start: isoTime, end: isoTime }),
      currency: string,
      items: arrayOf(
        object({
          machine_type: string,
          jobs: integer,
          seconds: decimal,
          unit_price: decimal,
          amount: decimal,
        }),
      ),
      storage: object({ byte_seconds: decimal, gb_months: decimal, unit_price: decimal, amount: decimal }),
      total: decimal,
    }),
    document: BillingUsageDocument,
    variables: (req) => ({ from: queryString(req, 'from'), to: queryString(req, 'to') }),
    respond: ({ usage: u }) => ({
      status: 200,
      body: {
        owner: u.owner,
        period: u.period,
        currency: u.currency,
        items: u.items.map((i) => ({
          machine_type: i.machineType,
          jobs: i.jobs,
          seconds: i.seconds,
          unit_price: i.unitPrice,
          amount: i.amount,
        })),
        storage: {
          byte_seconds: u.storage.byteSeconds,
          gb_months: u.storage.gbMonths,
          unit_price: u.storage.unitPrice,
          amount: u.storage.amount,
        },
        total: u.total,
      },
    }),
  }),
];

const budgetSchema = object({
  monthly_limit: { ...nullable(decimal), description: 'null: no budget set' },
  currency: string,
  spent: { ...decimal, description: "ended jobs' cost this month, plus running jobs' so far" },
  committed: { ...decimal, description: 'what unfinished jobs may still cost at most (their timeouts)' },
  period_start: isoTime,
  period_end: isoTime,
  action: nullable(enumOf(['block', 'notify'])),
});

const budgetJson = (b: RestBudgetFragment) => ({
  monthly_limit: b.monthlyLimit,
  currency: b.currency,
  spent: b.spent,
  committed: b.committed,
  period_start: b.periodStart,
  period_end: b.periodEnd,
  action: b.action === null || b.action === undefined ? null : b.action.toLowerCase(),
});

/** The body of PUT /api/v1/billing/budget as the mutation's input; its names as REST names them. */
function budgetInput(req: Parameters<typeof body>[0]) {
  const b = body(req);
  const limit = typeof b.monthly_limit === 'number' ? String(b.monthly_limit) : b.monthly_limit;
  if (typeof limit !== 'string')
    throw AppError.validation({ monthly_limit: 'must be a decimal string such as "500.00"' });
  if (b.action !== 'block' && b.action !== 'notify')
    throw AppError.validation({ action: 'must be one of block, notify' });
  if (b.webhook !== undefined && b.webhook !== null && typeof b.webhook !== 'string')
    throw AppError.validation({ webhook: 'must be an https URL or null' });
  return {
    monthlyLimit: limit,
    action: (b.action === 'block' ? 'BLOCK' : 'NOTIFY') as BudgetAction,
    webhook: (b.webhook as string | null | undefined) ?? null,
  };
}

/** The owner's monthly budget (docs/governance.md). */
billingRoutes.push(
  route({
    method: 'get',
    path: '/api/v1/billing/budget',
    summary: "The principal's owner's monthly budget and this month's spend (docs/governance.md)",
    response: budgetSchema,
    document: GetBudgetDocument,
    variables: () => ({}),
    respond: ({ budget }) => ({ status: 200, body: budgetJson(budget) }),
  }),
  route({
    method: 'put',
    path: '/api/v1/billing/budget',
    summary:
      'Set the monthly budget (a team: its owners only); `block` refuses work that could pass it with 402',
    request: requestBody(
      {
        monthly_limit: { ...decimal, description: "a positive amount in the price list's currency" },
        action: enumOf(['block', 'notify']),
        webhook: {
          ...nullable(url),
          description: 'receives signed `budget.threshold` messages at 80 % and 100 %',
        },
      },
      ['monthly_limit', 'action'],
    ),
    response: budgetSchema,
    document: SetBudgetDocument,
    variables: (req) => ({ input: budgetInput(req) }),
    respond: ({ setBudget }) => ({ status: 200, body: budgetJson(setBudget) }),
  }),
);
