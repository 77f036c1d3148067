import {
  GetWebhookSecretDocument,
  ListWebhookDeliveriesDocument,
  RotateWebhookSecretDocument,
  type ListWebhookDeliveriesQuery,
} from '../generated/graphql';
import { listResponse, pageVariables } from '../../src/http/http.rest';
import { route } from '../route';
import {
  arrayOf,
  enumOf,
  integer,
  isoTime,
  nullable,
  object,
  string,
  url,
  uuid,
} from '../../src/http/openapi/json-schema';
import { WEBHOOK_EVENTS } from '../../src/jobs/job.webhook-events';
import { WebhookAttemptOutcomeEnum, WebhookDeliveryStatusEnum } from '../../src/webhooks/webhook.types';

const secretSchema = object({
  key: {
    type: 'string',
    pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
    description: '`whsec_` and the base64 key',
  },
});

const deliverySchema = object({
  id: { ...string, description: 'the `webhook-id` every attempt of this message carries' },
  job_id: uuid,
  event: enumOf(WEBHOOK_EVENTS),
  url,
  status: enumOf(Object.values(WebhookDeliveryStatusEnum)),
  created_at: isoTime,
  delivered_at: nullable(isoTime),
  next_attempt_at: nullable(isoTime),
  attempts: arrayOf(
    object({
      attempt: integer,
      started_at: isoTime,
      duration_ms: nullable(integer),
      response_code: nullable(integer),
      outcome: enumOf(Object.values(WebhookAttemptOutcomeEnum)),
      error: nullable(string),
      response: { ...nullable(string), description: "the start of the receiver's answer" },
    }),
  ),
});

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
    summary: 'The key that signs your webhook messages (Standard Webhooks); made on first use',
    response: secretSchema,
    document: GetWebhookSecretDocument,
    variables: () => ({}),
    respond: ({ webhookSecret }) => ({ body: { key: webhookSecret.key } }),
  }),
  route({
    method: 'post',
    path: '/api/v1/webhooks/default/secret/rotate',
    summary: 'A new signing key; messages are signed with the previous one too for 24 hours',
    response: secretSchema,
    document: RotateWebhookSecretDocument,
    variables: () => ({}),
    respond: ({ rotateWebhookSecret }) => ({ body: { key: rotateWebhookSecret.key } }),
  }),
  route({
    method: 'get',
    path: '/api/v1/jobs/:id/webhook-deliveries',
    summary: "The job's webhook messages, each with its attempts",
    paged: true,
    response: arrayOf(deliverySchema),
    document: ListWebhookDeliveriesDocument,
    variables: (req) => ({ ...pageVariables(req), jobId: String(req.params.id) }),
    respond: ({ webhookDeliveries }, req) => listResponse(req, webhookDeliveries, deliveryJson),
  }),
];
