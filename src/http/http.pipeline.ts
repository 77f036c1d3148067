import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Express, RequestHandler, Router } from 'express';
import { fastLane, type LaneHandler, type LaneOptions } from './http.lane';

/**
 * A middleware that passes requests on: it runs on the generic stack and on every lane its
 * place in the pipeline and its filters put it on (docs/architecture.md, "The HTTP pipeline").
 */
export interface Stage {
  stage: string;
  handle: RequestHandler;
  /** Express mount paths (prefixes); every path when absent. */
  paths?: string[];
  /** Only requests of these methods meet it; a lane of another method leaves it out. */
  methods?: ('GET' | 'POST')[];
  /**
   * It passes a request without a body on as the lane leaves it (`req.body` undefined), so a
   * `GET` lane (which takes none) leaves it out. The generic stack runs it on every request.
   */
  withBody?: boolean;
}

/** Paths a lane answers in front of the app, with the handlers of the routes it stands for. */
export interface LaneRoutes {
  method?: LaneOptions['method'];
  admits?: LaneOptions['admits'];
  routes: ReadonlyMap<string, LaneHandler>;
}

/**
 * Handlers that answer their own paths (a router, or handlers mounted at `path`). A lane given
 * here answers its paths with the stages before this place, less the paths a router before it
 * claims (its routes of the lane's method, by exact path).
 */
export interface Routes {
  routes: string;
  handle: Router | RequestHandler | RequestHandler[];
  path?: string;
  lane?: LaneRoutes;
}

export type PipelineStep = Stage | Routes;

/** A lane in front of the app: true when it took the request. */
export type Lane = (req: IncomingMessage, res: ServerResponse) => boolean;

function isStage(step: PipelineStep): step is Stage {
  return 'stage' in step;
}

/**
 * The stage as the generic stack runs it: its method filter applied. (`withBody` is the stage's
 * own promise, not applied here: body-parser marks `req.body` on every request, which Apollo's
 * Express integration checks for, as the lane sets it.)
 */
function filtered({ handle, methods }: Stage): RequestHandler {
  if (!methods) return handle;
  return (req, res, next) => ((methods as string[]).includes(req.method) ? handle(req, res, next) : next());
}

/** Whether Express's mount at `mount` sees `path` (by segment, in any case). */
function mountedOver(mount: string, path: string): boolean {
  const m = mount.toLowerCase().replace(/\/$/, '');
  const p = path.toLowerCase();
  return m === '' || p === m || p.startsWith(`${m}/`);
}

/** Whether a lane of `method` over `paths` runs the stage (all its paths or none, never some). */
function runsOn(stage: Stage, method: string, paths: string[]): boolean {
  if (stage.methods && !(stage.methods as string[]).includes(method)) return false;
  if (stage.withBody && method === 'GET') return false;
  if (!stage.paths) return true;
  const seen = paths.filter((p) => stage.paths!.some((m) => mountedOver(m, p)));
  if (seen.length > 0 && seen.length < paths.length)
    throw new Error(`stage "${stage.stage}" guards some of a lane's paths, not all: ${seen.join(', ')}`);
  return seen.length > 0;
}

/** The `METHOD /path` of a router's own routes given by a string (Express syntax). */
function claimedBy(step: Routes): string[] {
  const router = step.handle as Partial<Router>;
  if (!Array.isArray(router.stack)) return [];
  const prefix = (step.path ?? '').replace(/\/$/, '');
  return router.stack.flatMap(({ route }) => {
    if (!route || typeof route.path !== 'string') return [];
    // Express's Route keeps its methods (lower case, `_all` for `router.all`); its types do not say so.
    const { methods } = route as unknown as { methods: Record<string, boolean> };
    return Object.keys(methods).map((m) => `${m === '_all' ? '*' : m.toUpperCase()} ${prefix}${route.path}`);
  });
}

/**
 * Mounts the pipeline on the app, in its order, then `errors`; answers the lanes it declares,
 * each with the stages before its place that its requests meet in the generic stack, in order.
 */
export function mountPipeline(
  app: Express,
  steps: readonly PipelineStep[],
  errors: ErrorRequestHandler,
): Lane[] {
  const lanes: Lane[] = [];
  const claimed = new Set<string>();
  steps.forEach((step, at) => {
    if (isStage(step)) return void app.use(step.paths ?? '/', filtered(step));
    app.use(step.path ?? '/', ...[step.handle].flat());
    if (step.lane) {
      const method = step.lane.method ?? 'GET';
      const routes = new Map(
        [...step.lane.routes].filter(
          ([path]) => !claimed.has(`${method} ${path}`) && !claimed.has(`* ${path}`),
        ),
      );
      const paths = [...routes.keys()];
      const stages = steps
        .slice(0, at)
        .filter((s): s is Stage => isStage(s) && runsOn(s, method, paths))
        .map((s) => s.handle);
      lanes.push(fastLane(app, { method, admits: step.lane.admits, stages, routes, errors }));
    }
    for (const key of claimedBy(step)) claimed.add(key);
  });
  app.use(errors);
  return lanes;
}
