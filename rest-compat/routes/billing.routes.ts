import { BillingUsageDocument } from '../generated/graphql';
import { queryString } from '../rest.helpers';
import { route } from '../route';

/** `GET /api/v1/billing/usage?from=&to=`: the shape is ours (docs/billing.md). */
export const billingRoutes = [
  route({
    method: 'get',
    path: '/api/v1/billing/usage',
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
