import { createHash, timingSafeEqual } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { ApiDoc } from '../http/openapi/openapi.docs';
import { boolean, integer, object, uuid } from '../http/openapi/json-schema';
import type { Config } from '../config';
import { AppError } from '../common/errors';
import { sendError, sendJson } from '../http/http.helpers';
import { callFromCdr, parseCdrBody } from './freeswitch.cdr';
import type { TelephonyService } from './telephony.service';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export const cdrDoc: ApiDoc = {
  method: 'post',
  path: '/api/v2/cdr',
  operationId: 'IngestCallRecord',
  summary: "FreeSWITCH's mod_json_cdr posts each call leg here (201 new, 200 a retry of a stored one)",
  security: 'cdr',
  query: { uuid: { description: "the leg's uuid, as mod_json_cdr appends it", schema: uuid } },
  requestBody: {
    required: true,
    content: {
      'application/json': { schema: { type: 'object', description: "mod_json_cdr's JSON" } },
      'application/x-www-form-urlencoded': { schema: { type: 'object', description: '`cdr=<json>`' } },
    },
  },
  status: 201,
  response: object({ id: integer, call_uuid: uuid, duplicate: boolean }),
  responses: {
    200: {
      description: 'a retry of a record already stored',
      content: {
        'application/json': { schema: object({ id: integer, call_uuid: uuid, duplicate: boolean }) },
      },
    },
  },
};

/**
 * `POST /api/v2/cdr`: where FreeSWITCH's mod_json_cdr posts each call leg. Machine-to-machine,
 * so it is mounted before user authentication and checks its own HTTP Basic credentials
 * (TELEPHONY_CDR_USERNAME / TELEPHONY_CDR_PASSWORD; without a password everything is refused).
 * Credentials are checked before the body is read. 201 stores a record, 200 answers a retry.
 */
export function cdrRoutes(
  config: Pick<Config, 'telephonyCdrUsername' | 'telephonyCdrPassword' | 'maxBodyBytes'>,
  telephony: TelephonyService,
): Router {
  const expected = config.telephonyCdrPassword
    ? digest(`${config.telephonyCdrUsername}:${config.telephonyCdrPassword}`)
    : undefined;

  const authenticate = (req: Request, res: Response, next: NextFunction) => {
    if (!expected) {
      return sendError(
        req,
        res,
        new AppError('UNAUTHENTICATED', 'CDR ingestion is disabled (TELEPHONY_CDR_PASSWORD is not set)'),
      );
    }
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '');
    // Both sides hashed to the same length, compared in constant time.
    const given = digest(match ? Buffer.from(match[1], 'base64').toString('utf8') : '');
    if (!match || !timingSafeEqual(given, expected)) {
      res.setHeader('WWW-Authenticate', 'Basic realm="cdr", charset="UTF-8"');
      return sendError(req, res, new AppError('UNAUTHENTICATED', 'wrong or missing CDR credentials'));
    }
    next();
  };

  const ingest = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const cdr = parseCdrBody(req.headers['content-type'], body);
      // mod_json_cdr appends ?uuid=<leg uuid> to the URL.
      const uuid = typeof req.query.uuid === 'string' ? req.query.uuid : undefined;
      const call = callFromCdr(cdr, uuid);
      const { id, created } = await telephony.recordCall(call);
      sendJson(req, res, created ? 201 : 200, {
        id: Number(id),
        call_uuid: call.callUuid,
        duplicate: !created,
      });
    } catch (err) {
      next(err);
    }
  };

  const router = Router();
  router.post('/', authenticate, express.raw({ type: () => true, limit: config.maxBodyBytes }), ingest);
  return router;
}
