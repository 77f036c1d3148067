import {
  GetWebhookSecretDocument,
  ListWebhookDeliveriesDocument,
  RotateWebhookSecretDocument,
  type ListWebhookDeliveriesQuery,
} from '../generated/graphql';
import { listResponse, pageVariables } from '../rest.helpers';
import { route } from '../route';

type Delivery = ListWebhookDeliveriesQuery['webhookDeliveries']['nodes'][number];

const deliveryJson = (d: Delivery) => ({
  id: d.id,
  job_id: d.jobId,
  event: d.event.toLowerCase(),
  url: d.url,
  status: d.status.toLowerCase(),
  created_at: d.createdAt,
  delivered_at: d.deliveredAt,
  next_attempt_at: d.nextAttemptAt,
  attempts: d.attempts.map((a) => ({
    attempt: a.attempt,
    started_at: a.startedAt,
    duration_ms: a.durationMs,
    response_code: a.responseCode,
    outcome: a.outcome.toLowerCase(),
    error: a.error,
    response: a.response,
  })),
});

/** Webhook signing secrets and the record of deliveries; see docs/webhooks.md. */
export const webhookRoutes = [
  route({
    method: 'get',
    path: '/api/v1/webhooks/default/secret',
    document: GetWebhookSecretDocument,
    variables: () => ({}),
    respond: ({ webhookSecret }) => ({ body: { key: webhookSecret.key } }),
  }),
  route({
    method: 'post',
    path: '/api/v1/webhooks/default/secret/rotate',
    document: RotateWebhookSecretDocument,
    variables: () => ({}),
    respond: ({ rotateWebhookSecret }) => ({ body: { key: rotateWebhookSecret.key } }),
  }),
  route({
    method: 'get',
    path: '/api/v1/jobs/:id/webhook-deliveries',
    document: ListWebhookDeliveriesDocument,
    variables: (req) => ({ ...pageVariables(req), jobId: String(req.params.id) }),
    respond: ({ webhookDeliveries }, req) => listResponse(req, webhookDeliveries, deliveryJson),
  }),
];
