/** What a deployment's webhook can be told about, as Replicate names it. */
export const WEBHOOK_EVENTS = ['start', 'output', 'logs', 'completed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The filter a deployment gets when it names none. */
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEvent[] = ['completed'];
