import { isDeepStrictEqual } from 'node:util';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Model } from './model.entity';
import { checkDefinition, type ModelDefinitionInput } from './model.validation';
import { recordVersion } from './model.version';

const DEMO = { container: 'builtin/media-demo', machineType: 'cpu', machineCount: 1 };

/**
 * The built-in demo models. They run `media-demo` (provided by the jobs module) on the local
 * executor without a GPU. Fixed ids, so every installation has the same catalogue entries.
 */
export const BUILTIN_MODELS: (ModelDefinitionInput & { id: string })[] = [
  {
    id: 'ae6f879c-3158-422d-8c51-cc68c7a2bb17',
    name: 'Image thumbnail',
    version: '1.0',
    description: 'Scales an image down to a thumbnail of the given width, keeping its aspect ratio.',
    ...DEMO,
    command: 'media-demo thumbnail {args}',
    tags: ['demo', 'image', 'thumbnail'],
    args: [
      { name: 'image', type: 'file', format: ':value', description: 'The image to scale down.' },
      {
        name: 'width',
        type: 'int',
        format: '--width=:value',
        optional: true,
        min: 16,
        max: 4096,
        example: '256',
        description: 'Width of the thumbnail in pixels.',
      },
      {
        name: 'format',
        type: 'string',
        format: '--format=:value',
        optional: true,
        example: 'png',
        choices: ['png', 'jpeg', 'webp'],
        description: 'Image format of the thumbnail.',
      },
    ],
  },
  {
    id: '4ff2afc2-2a33-4c29-afd5-025d011a58d9',
    name: 'Text recognition (OCR)',
    version: '1.0',
    description: 'Finds the text in an image and writes it out as plain text.',
    ...DEMO,
    command: 'media-demo ocr {args}',
    tags: ['demo', 'image', 'ocr', 'text'],
    args: [
      { name: 'image', type: 'file', format: ':value', description: 'The image to read.' },
      {
        name: 'lang',
        type: 'string',
        format: '--lang=:value',
        optional: true,
        example: 'eng',
        description: 'Language of the text.',
      },
    ],
  },
  {
    id: '24f808bb-acac-408c-af81-0345d5e0a78d',
    name: 'Word count',
    version: '1.0',
    description: 'Counts the lines, words and characters of a text file.',
    ...DEMO,
    command: 'media-demo wordcount {args}',
    tags: ['demo', 'text'],
    args: [{ name: 'text', type: 'file', format: ':value', description: 'The text file to count.' }],
  },
];

/**
 * Installs the built-in models, run at every start after the migrations. Idempotent: inserts
 * the missing ones (racing processes are fine), brings changed definitions up to date (a change
 * to what runs makes a new version, as for any model) and never touches run counts.
 */
export async function seedBuiltinModels(orm: MikroORM): Promise<void> {
  const em = orm.em.fork();
  const wanted = BUILTIN_MODELS.map(({ id, ...input }) => ({
    id,
    ...checkDefinition(input, undefined, { builtin: true }),
  }));
  const existing = await em.find(Model, { id: { $in: wanted.map((m) => m.id) } });
  for (const { id, ...definition } of wanted) {
    const owned = { ...definition, builtin: true, ownerType: null, ownerId: null };
    const row = existing.find((m) => m.id === id);
    if (row) {
      // Only what really changed (jsonb reorders keys), so updated_at moves only when the code did.
      const changed = Object.entries(owned).filter(([k, v]) => !isDeepStrictEqual(row[k as keyof Model], v));
      if (changed.length) em.assign(row, Object.fromEntries(changed));
    } else
      await em
        .createQueryBuilder(Model)
        .insert({ id, ...owned, createdAt: new Date(), updatedAt: new Date() })
        .onConflict('id')
        .ignore()
        .execute();
  }
  await em.flush();
  // Version 1 of a new built-in model, a new version of one whose running definition changed.
  for (const { id } of wanted) await recordVersion(em, id);
}
