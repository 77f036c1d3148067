import { Router, type Request, type Response } from 'express';
import { ownerOf, requirePrincipal, type Principal } from '../src/auth/principal';
import { AppError, toAppError } from '../src/common/errors';
import type { JobEvents } from '../src/jobs/job.events';
import type { EventScope, JobHistory, RecordedEvent } from '../src/jobs/job.history';
import type { JobService } from '../src/jobs/job.service';
import { isTerminal } from '../src/jobs/job.states';
import { sendError } from '../src/http/http.helpers';
import type { ApiDoc } from '../src/http/openapi/openapi.docs';
import { enumOf, isoTime, nullable, object, string, uuid } from '../src/http/openapi/json-schema';

const PAGE = 500;
const KEEPALIVE_MS = 15_000;
/** Live events a slow reader may fall behind by; past it the stream ends and the reader resumes from its last id. */
const MAX_PENDING = 1000;

/** Where a reader is: an event id, `<seq>` for a transition or `<seq>.<line>` for a log line. */
interface Position {
  seq: number;
  line: number;
}

function parsePosition(text: string | undefined): Position | null {
  if (text === undefined || text === '') return null;
  const m = /^(\d{1,18})(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (!m) throw new AppError('BAD_REQUEST', 'Last-Event-ID must be an id this stream sent');
  return { seq: Number(m[1]), line: m[2] === undefined ? Infinity : Number(m[2]) };
}

/** Writes events as `text/event-stream`, each once, in order of their ids. */
class EventWriter {
  constructor(
    private readonly res: Response,
    /** The last id written (or given as Last-Event-ID). */
    private at: Position,
  ) {}

  get position(): Position {
    return this.at;
  }

  /** Writes what of `e` comes after the position; false when the socket asks to wait. */
  write(e: RecordedEvent): boolean {
    let ok = true;
    if (e.kind === 'transition') {
      if (e.seq <= this.at.seq) return true;
      ok = this.frame(`${e.seq}`, 'transition', {
        job_id: e.jobId,
        status: e.status,
        from: e.from,
        at: e.at,
      });
      this.at = { seq: e.seq, line: Infinity };
    } else {
      if (e.seq < this.at.seq) return true;
      const first = e.seq === this.at.seq ? this.at.line + 1 : 0;
      e.lines.forEach((l, i) => {
        if (i < first) return;
        ok = this.frame(`${e.seq}.${i}`, 'log', {
          job_id: e.jobId,
          status: 'running',
          stream: l.stream,
          line: l.line,
        });
        this.at = { seq: e.seq, line: i };
      });
      this.at = { seq: e.seq, line: Infinity };
    }
    return ok;
  }

  private frame(id: string, event: string, data: unknown): boolean {
    return this.res.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }
}

const STATUS = enumOf(['queued', 'starting', 'running', 'succeeded', 'failed', 'canceled']);

/**
 * The stream as OpenAPI 3.1 can say it: a `text/event-stream` string, with the JSON `data` of
 * each event type in `x-events` (a Media Type Object extension; OpenAPI 3.2's `itemSchema` says
 * it natively).
 */
const eventStream = {
  content: {
    'text/event-stream': {
      schema: {
        type: 'string',
        description:
          'events `id: <id>`, `event: transition|log`, `data: <JSON>`; `: keepalive` comments every 15 s',
      },
      'x-events': {
        transition: {
          description: 'the job moved (id `<seq>`)',
          schema: object({ job_id: uuid, status: STATUS, from: nullable(STATUS), at: isoTime }),
        },
        log: {
          description: 'a line the job printed (id `<seq>.<line>`)',
          schema: object({
            job_id: uuid,
            status: enumOf(['running']),
            stream: enumOf(['stdout', 'stderr']),
            line: string,
          }),
        },
      },
    },
  },
};

const resume = {
  headers: {
    'Last-Event-ID': { description: 'resume after this event (an EventSource sends it when it reconnects)' },
  },
  query: { last_event_id: { description: 'the same, for clients that cannot set headers' } },
};

/** The event streams in the OpenAPI document (they are served outside the route table). */
export const jobEventDocs: ApiDoc[] = [
  {
    method: 'get',
    path: '/api/v1/jobs/:id/events',
    operationId: 'JobEvents',
    summary: "One job's events as server-sent events: its history, then live until it ends",
    ...resume,
    responses: {
      '200': { description: 'the stream; it ends after the job ended', ...eventStream },
      '204': { description: 'the job has ended and nothing came after `Last-Event-ID`: stop reconnecting' },
    },
  },
  {
    method: 'get',
    path: '/api/v1/jobs/events',
    operationId: 'AllJobEvents',
    summary: 'Events of all your jobs as server-sent events, live (from `Last-Event-ID` when given)',
    ...resume,
    responses: { '200': { description: 'the stream; it does not end', ...eventStream } },
  },
];

/**
 * Server-sent events for REST clients: `GET /api/v1/jobs/{id}/events` (one job: its whole
 * history, then live events until it ends) and `GET /api/v1/jobs/events` (every job of the
 * principal, live). `Last-Event-ID` (or `?last_event_id=`) resumes after that event, from the
 * database, even after the job ended. A byte stream, so it calls the services directly.
 */
export function jobEventRoutes(jobs: JobService, history: JobHistory, events: JobEvents): Router {
  const router = Router();
  const handle =
    (scopeOf: (req: Request, principal: Principal) => Promise<EventScope & { ended?: boolean }>) =>
    async (req: Request, res: Response) => {
      try {
        const principal = requirePrincipal((res.locals.principal as Principal | null) ?? null);
        const scope = await scopeOf(req, principal);
        const given = parsePosition(
          req.get('last-event-id') ??
            (typeof req.query.last_event_id === 'string' ? req.query.last_event_id : undefined),
        );
        // One job's stream replays from its start; the stream of all jobs only from a given id.
        const start = given ?? ('jobId' in scope ? { seq: 0, line: Infinity } : null);
        // An ended job with nothing after the reader's id: 204 tells an EventSource to stop reconnecting.
        if (scope.ended && given && !(await history.from(scope, given.seq, 2)).some((e) => isAfter(e, given)))
          return void res.status(204).end();
        await stream(req, res, scope, start, history, events);
      } catch (err) {
        const { error, unexpected } = toAppError(err);
        if (unexpected) req.log?.error({ err }, 'unexpected error in an event stream');
        if (res.headersSent) return void res.end();
        sendError(req, res, error);
      }
    };
  router.get(
    '/api/v1/jobs/events',
    handle(async (_req, principal) => ({ owner: ownerOf(principal) })),
  );
  router.get(
    '/api/v1/jobs/:id/events',
    handle(async (req, principal) => {
      const job = await jobs.get(principal, String(req.params.id));
      return { jobId: job.id, ended: isTerminal(job.status) };
    }),
  );
  return router;
}

function isAfter(e: RecordedEvent, p: Position): boolean {
  return e.seq > p.seq || (e.kind === 'log' && e.seq === p.seq && e.lines.length - 1 > p.line);
}

async function stream(
  req: Request,
  res: Response,
  scope: EventScope,
  start: Position | null,
  history: JobHistory,
  events: JobEvents,
): Promise<void> {
  const pending: RecordedEvent[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  const push = (e: RecordedEvent) => {
    pending.push(e);
    wake?.();
  };
  // Listening before the replay, so nothing falls in between (duplicates are skipped by id).
  // Transitions of a gap in the bus connection are read back by JobEvents (a job's end too).
  const off = await events.listen(scope, {
    transition: (e) =>
      push({ kind: 'transition', seq: e.seq, jobId: e.jobId, status: e.status, from: e.from, at: e.at }),
    lines: (e) => push({ kind: 'log', seq: e.seq, jobId: e.jobId, lines: e.lines }),
  });
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
  const done = () => {
    closed = true;
    wake?.();
  };
  res.on('close', done);
  try {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 3000\n\n');
    // Live only: whatever arrives from now on.
    const writer = new EventWriter(res, start ?? { seq: 0, line: Infinity });
    const ended = (e: RecordedEvent) => 'jobId' in scope && e.kind === 'transition' && isTerminal(e.status);
    const drain = () =>
      new Promise<void>((r) => (res.writableNeedDrain && !closed ? res.once('drain', r) : r()));
    if (start) {
      // The replay, page by page, each written before the next is read.
      for (;;) {
        const page = await history.from(scope, writer.position.seq, PAGE);
        for (const e of page) {
          if (closed) return;
          if (!writer.write(e)) await drain();
          if (ended(e)) return;
        }
        if (page.length < PAGE) break;
      }
    }
    for (;;) {
      if (closed) return;
      if (pending.length > MAX_PENDING) return; // too far behind: the reader resumes from its last id
      const e = pending.shift();
      if (!e) {
        await new Promise<void>((r) => (wake = r));
        wake = null;
        continue;
      }
      if (!writer.write(e)) await drain();
      if (ended(e)) return;
    }
  } finally {
    clearInterval(keepalive);
    off();
    res.off('close', done);
    if (!res.writableEnded) res.end();
  }
}
