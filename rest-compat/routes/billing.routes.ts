import { BillingUsageDocument } from '../generated/graphql';
import { queryString } from '../../src/http/http.rest';
import { route } from '../route';
import {
  arrayOf,
  decimal,
  enumOf,
  integer,
  isoTime,
  object,
  string,
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
