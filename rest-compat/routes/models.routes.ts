import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { Request } from 'express';
import { AppError } from '../../src/common/errors';
import { goTime } from '../../src/common/time';
import {
  CreateModelDocument,
  DeleteModelDocument,
  FollowModelDocument,
  GetModelDocument,
  GetModelVersionDocument,
  LikeModelDocument,
  ListModelsDocument,
  ListModelVersionsDocument,
  UnfollowModelDocument,
  UnlikeModelDocument,
  UpdateModelDocument,
  type CreateModelInput,
  type ModelArgumentInput,
  type RestModelFragment,
  type RestModelVersionFragment,
  type UpdateModelInput,
} from '../generated/graphql';
import { body, listResponse, optionalString, pageVariables, queryString } from '../../src/http/http.rest';
import { route } from '../route';
import {
  arrayOf,
  boolean,
  enumOf,
  goTimeText,
  integer,
  isoTime,
  mapOf,
  message,
  nullable,
  number,
  object,
  requestBody,
  string,
  url,
  uuid,
} from '../../src/http/openapi/json-schema';

type RestArgument = RestModelFragment['args'][number];

const tags = arrayOf(string);

/** A legacy argument as answered (argumentJson). */
const argumentSchema = object(
  {
    type: string,
    format: string,
    description: string,
    example: string,
    optional: boolean,
    tags: nullable(tags),
    min: number,
    max: number,
  },
  ['description', 'min', 'max'],
);

/** The full legacy record (modelJson). */
const modelSchema = object(
  {
    args: mapOf(argumentSchema),
    black_icon: string,
    white_icon: string,
    color_icon: string,
    classification: string,
    description: string,
    example_outputs: arrayOf(string),
    id: uuid,
    name: string,
    version: string,
    run_count: integer,
    tags,
    updated_at: goTimeText,
  },
  ['description'],
);

const icon = { type: ['string', 'null'], description: 'an http(s) URL; empty or null removes it' };

/** A model's definition as a request gives it (FIELDS and ARGUMENT_FIELDS). */
const definitionSchema = {
  name: string,
  version: string,
  description: string,
  container: string,
  command: { type: 'string', description: 'the command template; `{args}` is where the arguments go' },
  machine_type: string,
  machine_count: integer,
  timeout_seconds: integer,
  tags,
  black_icon: icon,
  white_icon: icon,
  color_icon: icon,
  example_outputs: arrayOf(url),
  visibility: {
    ...enumOf(['public', 'private']),
    description: 'default `public`; not shown in the legacy record',
  },
  shared_with: { ...arrayOf(uuid), description: 'team ids that see and run the model while it is private' },
  secrets: {
    ...arrayOf(string),
    description: "names of the owner's secrets each job gets (docs/secrets.md)",
  },
  args: mapOf(
    requestBody(
      {
        type: { type: 'string', enum: ['int', 'float', 'string', 'file'] },
        format: { type: 'string', description: '`:value` is where the value goes' },
        description: string,
        example: string,
        optional: boolean,
        tags,
        min: number,
        max: number,
      },
      ['type', 'format'],
    ),
  ),
};

/** A legacy argument: description and bounds only where set; example and tags always. */
const argumentJson = (a: RestArgument) => ({
  type: a.type,
  format: a.format,
  ...(a.description ? { description: a.description } : {}),
  example: a.example ?? '',
  optional: a.optional,
  tags: a.tags,
  ...(a.min !== null ? { min: a.min } : {}),
  ...(a.max !== null ? { max: a.max } : {}),
});

/** The full legacy record; unset icons are empty strings, description only where set. */
const modelJson = (m: RestModelFragment) => ({
  args: Object.fromEntries(m.args.map((a) => [a.name, argumentJson(a)])),
  black_icon: m.blackIcon ?? '',
  white_icon: m.whiteIcon ?? '',
  color_icon: m.colorIcon ?? '',
  classification: m.classification,
  ...(m.description ? { description: m.description } : {}),
  example_outputs: m.exampleOutputs,
  id: m.id,
  name: m.name,
  version: m.version,
  run_count: m.runCount,
  tags: m.tags,
  updated_at: goTime(m.updatedAt),
});

/** A version (`/api/v1/models/{id}/versions`): a path of its own, so the legacy record is unchanged. */
const versionSchema = object({
  id: uuid,
  model_id: uuid,
  sequence: integer,
  container: string,
  command: string,
  machine_type: string,
  machine_count: integer,
  timeout_seconds: integer,
  args: mapOf(argumentSchema),
  secrets: arrayOf(string),
  created_at: isoTime,
});

const versionJson = (v: RestModelVersionFragment) => ({
  id: v.id,
  model_id: v.modelId,
  sequence: v.sequence,
  container: v.container,
  command: v.command,
  machine_type: v.machineType,
  machine_count: v.machineCount,
  timeout_seconds: v.timeoutSeconds,
  args: Object.fromEntries(v.args.map((a) => [a.name, argumentJson(a)])),
  secrets: v.secrets,
  created_at: v.createdAt,
});

/** Legacy body field -> GraphQL input field. `id`, `classification`, `run_count`, `updated_at` are read-only. */
const FIELDS = {
  name: 'name',
  version: 'version',
  description: 'description',
  container: 'container',
  command: 'command',
  machine_type: 'machineType',
  machine_count: 'machineCount',
  timeout_seconds: 'timeoutSeconds',
  max_retries: 'maxRetries',
  tags: 'tags',
  black_icon: 'blackIcon',
  white_icon: 'whiteIcon',
  color_icon: 'colorIcon',
  example_outputs: 'exampleOutputs',
  visibility: 'visibility',
  shared_with: 'sharedWith',
  secrets: 'secrets',
} as const;

/** The JSON type each argument field must have; checked here, where the argument's name is known. */
const ARGUMENT_FIELDS = {
  type: 'string',
  format: 'string',
  description: 'string',
  example: 'string',
  optional: 'boolean',
  tags: 'array',
  min: 'number',
  max: 'number',
} as const;

/** The legacy `args` map (name -> definition) as the GraphQL list, keeping the names and order. */
function argumentList(args: unknown): ModelArgumentInput[] | null {
  if (args === null) return null;
  if (typeof args !== 'object' || Array.isArray(args))
    throw AppError.validation({ args: 'must be an object mapping argument names to definitions' });
  return Object.entries(args).map(([name, definition]) => {
    if (typeof definition !== 'object' || definition === null || Array.isArray(definition))
      throw AppError.validation({ [`args.${name}`]: 'must be an object' });
    const d = definition as Record<string, unknown>;
    // Missing type and format reach the service as empty, which names the argument in its error.
    const arg: Record<string, unknown> = { name, type: '', format: '' };
    for (const [field, kind] of Object.entries(ARGUMENT_FIELDS)) {
      const v = d[field];
      if (v === undefined || v === null) continue;
      if (kind === 'array' ? !Array.isArray(v) : typeof v !== kind)
        throw AppError.validation({
          [`args.${name}.${field}`]: `must be a${kind === 'array' ? 'n' : ''} ${kind}`,
        });
      arg[field] = v;
    }
    return arg as ModelArgumentInput;
  });
}

/** The definition fields of a legacy body; absent fields stay absent (kept on update). */
function definitionInput(req: Request) {
  const b = body(req);
  const input: Record<string, unknown> = {};
  for (const [legacy, field] of Object.entries(FIELDS)) if (b[legacy] !== undefined) input[field] = b[legacy];
  if (b.args !== undefined) input.args = argumentList(b.args);
  return { b, input };
}

const reaction = <TData>(action: string, document: TypedDocumentNode<TData, { id: string }>) =>
  route({
    method: 'patch',
    path: `/api/v1/models/:id/${action}`,
    summary: `${action[0].toUpperCase()}${action.slice(1)} a model`,
    response: message,
    document,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: () => ({ status: 200, body: { message: `model ${action} successfully` } }),
  });

/** The model catalogue (`/api/v1/models`); see docs/models.md. */
export const modelRoutes = [
  route({
    method: 'post',
    path: '/api/v1/models',
    summary: 'Add a model to the catalogue',
    request: requestBody({ id: uuid, ...definitionSchema }, ['name', 'container', 'args']),
    status: 201,
    response: object({
      classification: string,
      example_outputs: arrayOf(string),
      id: uuid,
      name: string,
      version: string,
      tags,
    }),
    document: CreateModelDocument,
    variables: (req) => {
      const { b, input } = definitionInput(req);
      return { input: { ...input, id: optionalString(b, 'id') } as CreateModelInput };
    },
    respond: ({ createModel: m }) => ({
      status: 201,
      body: {
        classification: m.classification,
        example_outputs: m.exampleOutputs,
        id: m.id,
        name: m.name,
        version: m.version,
        tags: m.tags,
      },
    }),
  }),
  route({
    method: 'get',
    path: '/api/v1/models',
    summary: 'List the catalogue',
    paged: true,
    query: { tags: { description: 'comma-separated: models carrying any of these tags' } },
    response: arrayOf(modelSchema),
    document: ListModelsDocument,
    variables: (req) => ({ ...pageVariables(req), filter: { tags: queryString(req, 'tags')?.split(',') } }),
    respond: ({ models }, req) => listResponse(req, models, modelJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/models/:id',
    summary: 'One model',
    response: modelSchema,
    document: GetModelDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: ({ model }) => ({ status: 200, body: modelJson(model) }),
  }),
  route({
    method: 'put',
    path: '/api/v1/models/:id',
    summary: 'Change a model of yours; absent fields keep their value',
    request: requestBody(definitionSchema),
    response: modelSchema,
    document: UpdateModelDocument,
    variables: (req) => ({
      id: String(req.params.id),
      input: definitionInput(req).input as UpdateModelInput,
    }),
    respond: ({ updateModel }) => ({ status: 200, body: modelJson(updateModel) }),
  }),
  route({
    method: 'delete',
    path: '/api/v1/models/:id',
    summary: 'Remove a model of yours from the catalogue',
    status: 204,
    document: DeleteModelDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: () => ({ status: 204 }),
  }),
  route({
    method: 'get',
    path: '/api/v1/models/:id/versions',
    summary: "A model's versions, newest first",
    paged: true,
    response: arrayOf(versionSchema),
    document: ListModelVersionsDocument,
    variables: (req) => ({ ...pageVariables(req), id: String(req.params.id) }),
    respond: ({ model }, req) => listResponse(req, model.versions, versionJson),
  }),
  route({
    method: 'get',
    path: '/api/v1/models/:id/versions/:versionId',
    summary: 'One version of a model',
    response: versionSchema,
    document: GetModelVersionDocument,
    variables: (req) => ({ modelId: String(req.params.id), id: String(req.params.versionId) }),
    respond: ({ modelVersion }) => ({ status: 200, body: versionJson(modelVersion) }),
  }),
  reaction('like', LikeModelDocument),
  reaction('unlike', UnlikeModelDocument),
  reaction('follow', FollowModelDocument),
  reaction('unfollow', UnfollowModelDocument),
];
