import {
  AssignNumberDocument,
  CallLinkDocument,
  ListCallRecordsDocument,
  type ListCallRecordsQuery,
} from '../generated/graphql';
import { listResponse, pageVariables, queryString } from '../../src/http/http.rest';
import { route } from '../route';
import { arrayOf, integer, isoTime, object, string, uuid } from '../../src/http/openapi/json-schema';

type CallRecordNode = ListCallRecordsQuery['callRecords']['nodes'][number];

/** The spec shows the assignment's times as ISO 8601 "with offset": `+00:00` rather than `Z`. */
const withOffset = (iso: string) => iso.replace(/Z$/, '+00:00');

/** Integers where the spec says so; 0 and "" stand for unknown, as the legacy zero values did. */
const callRecordJson = (r: CallRecordNode) => ({
  id: Number(r.id),
  provider: r.provider,
  call_to: r.callTo,
  call_from: r.callFrom,
  extension: r.extension ? Number(r.extension) : 0,
  bill_duration: r.billDuration,
  didnumber: r.didNumber ? Number(r.didNumber) : 0,
  domain: r.domain,
  hangup_cause: r.hangupCause,
  recording: r.recording ?? '',
  call_direction: r.callDirection,
  call_uuid: r.callUuid,
  created_at: r.createdAt,
  started_at: r.startedAt,
});

/** Telephony (`/api/v2`); see docs/telephony.md. The CDR endpoint is not here: it is not a user's. */
export const telephonyRoutes = [
  route({
    method: 'get',
    path: '/api/v2/assign-number',
    summary: 'Your phone number and extension, assigned on the first call',
    response: object({
      role: string,
      phone_number: { type: 'string', pattern: '^\\d+$' },
      idp_id: string,
      extension: { type: 'string', pattern: '^\\d+$' },
      created_at: isoTime,
      updated_at: isoTime,
    }),
    document: AssignNumberDocument,
    variables: () => ({}),
    respond: ({ assignNumber: a }) => ({
      body: {
        role: a.role,
        phone_number: a.phoneNumber,
        idp_id: a.idpId,
        extension: a.extension,
        created_at: withOffset(a.createdAt),
        updated_at: withOffset(a.updatedAt),
      },
    }),
  }),
  route({
    method: 'get',
    path: '/api/v2/call-recording',
    summary: 'Your call records, with their recordings',
    paged: true,
    response: arrayOf(
      object({
        id: integer,
        provider: integer,
        call_to: string,
        call_from: string,
        extension: integer,
        bill_duration: integer,
        didnumber: integer,
        domain: string,
        hangup_cause: string,
        recording: string,
        call_direction: string,
        call_uuid: uuid,
        created_at: isoTime,
        started_at: isoTime,
      }),
    ),
    document: ListCallRecordsDocument,
    variables: (req) => pageVariables(req),
    respond: ({ callRecords }, req) => listResponse(req, callRecords, callRecordJson),
  }),
  route({
    method: 'get',
    path: '/api/v2/call-link',
    summary: 'Click-to-call: rings your extension, then connects it to the destination',
    query: {
      source_number: {
        description: 'digits: the number to show and ring first',
        schema: { type: 'string', pattern: '^\\d+$' },
      },
      destination_number: {
        description: 'digits: the number to call',
        schema: { type: 'string', pattern: '^\\d+$' },
      },
    },
    response: object({ call_uuid: uuid, status: string }),
    document: CallLinkDocument,
    variables: (req) => ({
      source: queryString(req, 'source_number') ?? '',
      destination: queryString(req, 'destination_number') ?? '',
    }),
    respond: ({ callLink }) => ({ body: { call_uuid: callLink.callUuid, status: callLink.status } }),
  }),
];
