import type { Request } from 'express';
import { AppError } from '../../src/common/errors';
import { goTime } from '../../src/common/time';
import {
  DeleteMediaDocument,
  ListMediaDocument,
  UpdateMediaTagsDocument,
  type RestMediaFragment,
} from '../generated/graphql';
import { body, listResponse, pageVariables, queryOf } from '../../src/http/http.rest';
import { route } from '../route';
import {
  arrayOf,
  enumOf,
  goTimeText,
  object,
  requestBody,
  string,
  url,
  uuid,
} from '../../src/http/openapi/json-schema';

/** The Media asset list item of the spec: `media_key` is the full URL here. */
const MEDIA_STATUSES = ['live'];
const MEDIA_TYPES = ['source_asset', 'target_asset'];

const tags = arrayOf(string);

const mediaItem = (m: RestMediaFragment) => ({
  id: m.id,
  image_name: m.imageName,
  media_key: m.url,
  status: lower(m.status),
  tags: m.tags,
  type: lower(m.type),
  upload_date: goTime(m.createdAt),
});

/** The enums' names in lower case: the same strings for every item, not a new one per item. */
const LOWER = new Map([...MEDIA_STATUSES, ...MEDIA_TYPES].map((v) => [v.toUpperCase(), v]));
const lower = (name: string) => LOWER.get(name) ?? name.toLowerCase();

/** `?tags=a,b` as a list; absent or empty means no filter. */
function tagList(req: Request, name: string): string[] | undefined {
  const v = queryOf(req)[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw AppError.validation({ [name]: 'give one comma-separated list' });
  return v.split(',');
}

/** Media: `{base_url}/api/v1/media` (the upload is `upload.routes.ts`, a byte stream). */
export const mediaRoutes = [
  route({
    method: 'get',
    path: '/api/v1/media',
    summary: 'List your media; `media_key` of each item is its full URL',
    paged: true,
    query: {
      tags: { description: 'comma-separated: only media with all of these tags' },
      excludeTags: { description: 'comma-separated: no media with any of these tags' },
    },
    response: object({
      media: arrayOf(
        object({
          id: uuid,
          image_name: string,
          media_key: url,
          status: enumOf(MEDIA_STATUSES),
          tags,
          type: enumOf(MEDIA_TYPES),
          upload_date: goTimeText,
        }),
      ),
      media_key: url,
    }),
    document: ListMediaDocument,
    variables: (req) => ({
      ...pageVariables(req),
      filter: { tags: tagList(req, 'tags'), excludeTags: tagList(req, 'excludeTags') },
    }),
    respond: ({ media, mediaBaseUrl }, req) => {
      const page = listResponse(req, media, mediaItem);
      return { ...page, body: { media: page.body, media_key: mediaBaseUrl } };
    },
  }),
  route({
    method: 'put',
    path: '/api/v1/media/:id',
    summary: "Replace a media asset's tags",
    request: requestBody({ tags }, ['tags']),
    response: object({
      media: object({
        id: uuid,
        media_key: { type: 'string', pattern: '^media/' },
        status: enumOf(MEDIA_STATUSES),
        tags,
        title: string,
      }),
      media_key: url,
    }),
    document: UpdateMediaTagsDocument,
    // A list, like every list input (src/server/graphql.inputs.ts).
    variables: (req) => ({ id: String(req.params.id), tags: body(req).tags as string[] }),
    respond: ({ updateMediaTags: m }) => ({
      body: {
        // The update answer's media_key is relative; the root beside it makes it whole.
        media: {
          id: m.id,
          media_key: m.mediaKey,
          status: m.status.toLowerCase(),
          tags: m.tags,
          title: m.imageName,
        },
        media_key: m.url.slice(0, m.url.length - m.mediaKey.length),
      },
    }),
  }),
  route({
    method: 'delete',
    path: '/api/v1/media/:id',
    summary: 'Delete a media asset and its file',
    status: 204,
    document: DeleteMediaDocument,
    variables: (req) => ({ id: String(req.params.id) }),
    respond: () => ({ status: 204 }),
  }),
];
